//! Opening a GPU: instance, adapter choice, device and queue.

use super::device::Device;
use super::queue::Queue;
use crate::diag::{ObjectKind, Tracked, Tracker};
use crate::error::{Error, Result};
use std::sync::Arc;

/// How to open a GPU. `Default` searches every backend and takes the best
/// adapter, honouring `WGPU_BACKEND` and `WGPU_ADAPTER_NAME`.
#[derive(Clone, Debug, Default)]
pub struct GpuOptions {
    /// Backends to search, as wgpu names them (`"vulkan"`, `"gl"`, `"vulkan,gl"`).
    /// `None` reads `WGPU_BACKEND`, and without it searches all.
    pub backend: Option<String>,
    /// Case-insensitive part of the adapter's name, driver or driver details
    /// (`"llvmpipe"`, `"mesa"`); `"lavapipe"` picks Mesa's Vulkan CPU adapter.
    /// `None` reads `WGPU_ADAPTER_NAME`, and without it takes the best adapter.
    pub adapter: Option<String>,
    /// Optional features the device must have.
    pub required_features: wgpu::Features,
    /// Features to turn on where the adapter has them (and to go without
    /// where it has not): ask `device().features()` which were.
    pub wanted_features: wgpu::Features,
    /// Limits the device must have; `None` asks for everything the adapter offers.
    pub required_limits: Option<wgpu::Limits>,
    /// The display the GPU presents to, for windows: the GL backend needs
    /// it to present at all (on Vulkan it is unused). With a windowing
    /// library, pass the display handle its event loop owns.
    pub display: Option<Arc<dyn wgpu::wgt::WgpuHasDisplayHandle>>,
}

impl GpuOptions {
    /// Options that search only `backend`.
    pub fn backend(backend: impl Into<String>) -> Self {
        Self {
            backend: Some(backend.into()),
            ..Self::default()
        }
    }

    fn backends(&self) -> Result<wgpu::Backends> {
        let from_env = || {
            std::env::var("WGPU_BACKEND")
                .ok()
                .filter(|s| !s.trim().is_empty())
        };
        match self.backend.clone().or_else(from_env) {
            Some(list) => parse_backends(&list),
            None => Ok(wgpu::Backends::all()),
        }
    }

    fn adapter_name(&self) -> Option<String> {
        let from_env = || {
            std::env::var("WGPU_ADAPTER_NAME")
                .ok()
                .filter(|s| !s.trim().is_empty())
        };
        self.adapter.clone().or_else(from_env)
    }
}

/// Parses a comma-separated list of backend names; unknown names are an error.
pub fn parse_backends(list: &str) -> Result<wgpu::Backends> {
    let mut out = wgpu::Backends::empty();
    for name in list.split(',').map(|s| s.trim().to_ascii_lowercase()) {
        out |= match name.as_str() {
            "vulkan" | "vk" => wgpu::Backends::VULKAN,
            "gl" | "gles" | "opengl" => wgpu::Backends::GL,
            "metal" | "mtl" => wgpu::Backends::METAL,
            "dx12" | "d3d12" => wgpu::Backends::DX12,
            _ => return Err(Error::UnknownBackend(name)),
        };
    }
    Ok(out)
}

/// Preference order: real GPUs first, then software; among equals, the API
/// with the cheaper uploads (lavapipe's Vulkan beats llvmpipe's GL several-fold).
fn rank(info: &wgpu::AdapterInfo) -> (u8, u8) {
    let device = match info.device_type {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 4,
    };
    let api = match info.backend {
        wgpu::Backend::Vulkan => 0,
        wgpu::Backend::Metal => 1,
        wgpu::Backend::Dx12 => 2,
        wgpu::Backend::Gl => 3,
        _ => 4,
    };
    (device, api)
}

fn describe(info: &wgpu::AdapterInfo) -> String {
    format!("{} ({:?})", info.name, info.backend)
}

/// An open GPU: the adapter, a device and its queue, and the tracker that
/// counts every object made through them.
///
/// Cheap to share behind an `Arc`; every method takes `&self`.
pub struct Gpu {
    instance: wgpu::Instance,
    adapter: Tracked<wgpu::Adapter>,
    device: Device,
    queue: Queue,
    tracker: Arc<Tracker>,
}

impl Gpu {
    /// Opens the best adapter allowed by `options`.
    ///
    /// Errors: [`Error::UnknownBackend`], [`Error::NoAdapter`] (with what to
    /// install), [`Error::AdapterNotFound`], [`Error::RequestDevice`].
    pub fn open(options: &GpuOptions) -> Result<Self> {
        let backends = options.backends()?;
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
        desc.backends = backends;
        desc.display = options
            .display
            .clone()
            .map(|d| Box::new(d) as Box<dyn wgpu::wgt::WgpuHasDisplayHandle>);
        let instance = wgpu::Instance::new(desc);
        let adapter = choose_adapter(&instance, backends, options.adapter_name())?;
        let tracker = Tracker::new();
        let (device, queue) = open_device(&adapter, options, &tracker)?;
        let adapter = Tracked::new(&tracker, ObjectKind::Adapter, 0, None, adapter);
        Ok(Self {
            instance,
            adapter,
            device,
            queue,
            tracker,
        })
    }

    /// Opens the default GPU: [`Gpu::open`] with default options.
    pub fn open_default() -> Result<Self> {
        Self::open(&GpuOptions::default())
    }

    /// The wgpu instance, for wgpu's global report.
    pub fn instance(&self) -> &wgpu::Instance {
        &self.instance
    }

    /// The adapter.
    pub fn adapter(&self) -> &wgpu::Adapter {
        &self.adapter
    }

    /// The device, which creates tracked objects.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The queue.
    pub fn queue(&self) -> &Queue {
        &self.queue
    }

    /// The tracker that counts every object made through this GPU.
    pub fn tracker(&self) -> &Arc<Tracker> {
        &self.tracker
    }

    /// The adapter's name, backend and type.
    pub fn info(&self) -> wgpu::AdapterInfo {
        self.adapter.get_info()
    }
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("adapter", &describe(&self.adapter.get_info()))
            .field("tracker", &self.tracker)
            .finish_non_exhaustive()
    }
}

fn choose_adapter(
    instance: &wgpu::Instance,
    backends: wgpu::Backends,
    name: Option<String>,
) -> Result<wgpu::Adapter> {
    let mut adapters = pollster::block_on(instance.enumerate_adapters(backends));
    adapters.sort_by_key(|a| rank(&a.get_info()));
    if let Some(wanted) = name {
        let needle = wanted.to_lowercase();
        let available = adapters.iter().map(|a| describe(&a.get_info())).collect();
        return adapters
            .into_iter()
            .find(|a| name_matches(&a.get_info(), &needle))
            .ok_or(Error::AdapterNotFound { wanted, available });
    }
    let first = adapters.into_iter().next();
    first.ok_or_else(|| no_adapter(backends))
}

/// Whether an adapter answers to `needle` (lower case): a part of its name,
/// driver or driver details, or `lavapipe`, which names itself `llvmpipe` on
/// Vulkan and so is told from GL's llvmpipe by its backend.
fn name_matches(info: &wgpu::AdapterInfo, needle: &str) -> bool {
    if needle == "lavapipe" {
        return info.backend == wgpu::Backend::Vulkan
            && info.driver.eq_ignore_ascii_case("llvmpipe");
    }
    let haystack = format!("{} {} {}", info.name, info.driver, info.driver_info).to_lowercase();
    haystack.contains(needle)
}

/// The error for an empty search, naming adapters on backends not searched.
fn no_adapter(backends: wgpu::Backends) -> Error {
    let others = wgpu::Backends::all() - backends;
    let adapters_seen = if others.is_empty() {
        Vec::new()
    } else {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
        desc.backends = others;
        let all = wgpu::Instance::new(desc);
        let found = pollster::block_on(all.enumerate_adapters(others));
        found.iter().map(|a| describe(&a.get_info())).collect()
    };
    Error::NoAdapter {
        backends: format!("{backends:?}"),
        adapters_seen,
    }
}

fn open_device(
    adapter: &wgpu::Adapter,
    options: &GpuOptions,
    tracker: &Arc<Tracker>,
) -> Result<(Device, Queue)> {
    let desc = wgpu::DeviceDescriptor {
        label: Some("stagehand"),
        required_features: options.required_features
            | (options.wanted_features & adapter.features()),
        required_limits: options
            .required_limits
            .clone()
            .unwrap_or_else(|| adapter.limits()),
        ..Default::default()
    };
    let refused = |reason: String| Error::RequestDevice {
        adapter: describe(&adapter.get_info()),
        reason,
    };
    // Opened able to import host memory where the adapter can (Vulkan with
    // VK_EXT_external_memory_host), else as wgpu opens it.
    #[cfg(any(windows, all(unix, not(target_vendor = "apple"))))]
    let (device, queue, host) = match super::host_import::open(adapter, &desc) {
        Some(Ok((device, queue, host))) => (device, queue, Some(host)),
        // Not able to import, or opened that way it failed: as wgpu opens
        // it (whose error, if any, is the one to give).
        Some(Err(_)) | None => {
            let (device, queue) = pollster::block_on(adapter.request_device(&desc))
                .map_err(|e| refused(e.to_string()))?;
            (device, queue, None)
        }
    };
    #[cfg(not(any(windows, all(unix, not(target_vendor = "apple")))))]
    let (device, queue) =
        pollster::block_on(adapter.request_device(&desc)).map_err(|e| refused(e.to_string()))?;
    let sink = Arc::clone(tracker);
    // wgpu's default handler panics; an error stagehand did not scope is
    // recorded for the report instead, so bad input never aborts the process.
    device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
        sink.record_uncaptured_error(e.to_string())
    }));
    let raw_device = device.clone();
    let device = Device::new(
        Tracked::new(tracker, ObjectKind::Device, 0, None, device),
        adapter.clone(),
        #[cfg(any(windows, all(unix, not(target_vendor = "apple"))))]
        host,
    );
    let queue = Queue::new(
        Tracked::new(tracker, ObjectKind::Queue, 0, None, queue),
        raw_device,
    );
    Ok((device, queue))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_lists_parse_and_unknown_names_are_errors() {
        assert_eq!(parse_backends("vulkan").unwrap(), wgpu::Backends::VULKAN);
        assert_eq!(
            parse_backends(" GL , vk").unwrap(),
            wgpu::Backends::VULKAN | wgpu::Backends::GL
        );
        let err = parse_backends("vulkan,glide").unwrap_err();
        assert!(
            matches!(err, Error::UnknownBackend(ref n) if n == "glide"),
            "{err}"
        );
    }
}
