//! The report's standard sections. Each is plain data that serialises to
//! JSON and knows its text form.

pub mod adapter;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod objects;
pub mod pool;
pub mod system;
pub mod upload;
pub mod versions;
pub mod wgpu_report;

pub use adapter::AdapterSection;
#[cfg(feature = "cuda")]
pub use cuda::CudaSection;
pub use objects::ObjectCounts;
pub use pool::{PoolClasses, PoolSection};
pub use system::SystemInfo;
pub use upload::UploadSection;
pub use versions::Versions;
pub use wgpu_report::{AllocatorSummary, HalCounters, HubEntry, WgpuReport};
