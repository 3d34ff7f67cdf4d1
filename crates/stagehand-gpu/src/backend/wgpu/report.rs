//! Collects the report sections that come from wgpu: the adapter, and wgpu's
//! own global report, internal counters and allocator report.

use super::context::Gpu;
use crate::diag::Report;
use crate::diag::sections::{
    AdapterSection, AllocatorSummary, HalCounters, HubEntry, ObjectCounts, SystemInfo, Versions,
    WgpuReport,
};

/// The adapter section of `gpu`.
pub fn adapter_section(gpu: &Gpu) -> AdapterSection {
    let info = gpu.info();
    let device = gpu.device();
    let l = device.limits();
    let limits = [
        (
            "max_texture_dimension_2d",
            u64::from(l.max_texture_dimension_2d),
        ),
        (
            "max_texture_dimension_3d",
            u64::from(l.max_texture_dimension_3d),
        ),
        (
            "max_texture_array_layers",
            u64::from(l.max_texture_array_layers),
        ),
        ("max_buffer_size", l.max_buffer_size),
        (
            "max_storage_buffer_binding_size",
            l.max_storage_buffer_binding_size,
        ),
        (
            "max_uniform_buffer_binding_size",
            l.max_uniform_buffer_binding_size,
        ),
        ("max_bind_groups", u64::from(l.max_bind_groups)),
        (
            "max_compute_invocations_per_workgroup",
            u64::from(l.max_compute_invocations_per_workgroup),
        ),
        (
            "min_uniform_buffer_offset_alignment",
            u64::from(l.min_uniform_buffer_offset_alignment),
        ),
        (
            "copy_bytes_per_row_alignment",
            u64::from(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT),
        ),
    ];
    AdapterSection {
        name: info.name.clone(),
        backend: format!("{:?}", info.backend),
        device_type: format!("{:?}", info.device_type),
        software: info.device_type == wgpu::DeviceType::Cpu,
        driver: info.driver.clone(),
        driver_info: info.driver_info.clone(),
        vendor: info.vendor,
        device: info.device,
        features: device
            .features()
            .iter_names()
            .map(|(n, _)| n.to_owned())
            .collect(),
        limits: limits.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect(),
    }
}

/// wgpu's own view of `gpu`: its global report, internal counters and
/// allocator report.
pub fn wgpu_section(gpu: &Gpu) -> WgpuReport {
    let backend = gpu.info().backend;
    WgpuReport {
        backend: format!("{backend:?}"),
        hub: gpu
            .instance()
            .generate_report()
            .map(|r| hub_entries(r.hub_report()))
            .unwrap_or_default(),
        counters: hal_counters(&gpu.device().get_internal_counters().hal, backend),
        allocator: gpu
            .device()
            .generate_allocator_report()
            .map(|r| AllocatorSummary {
                allocations: r.allocations.len() as u64,
                blocks: r.blocks.len() as u64,
                allocated_bytes: r.total_allocated_bytes,
                reserved_bytes: r.total_reserved_bytes,
            }),
    }
}

fn hub_entries(hub: &wgpu::wgc::hub::HubReport) -> Vec<HubEntry> {
    let registries = [
        ("adapters", &hub.adapters),
        ("devices", &hub.devices),
        ("queues", &hub.queues),
        ("buffers", &hub.buffers),
        ("textures", &hub.textures),
        ("texture_views", &hub.texture_views),
        ("samplers", &hub.samplers),
        ("bind_group_layouts", &hub.bind_group_layouts),
        ("bind_groups", &hub.bind_groups),
        ("pipeline_layouts", &hub.pipeline_layouts),
        ("shader_modules", &hub.shader_modules),
        ("render_pipelines", &hub.render_pipelines),
        ("compute_pipelines", &hub.compute_pipelines),
        ("pipeline_caches", &hub.pipeline_caches),
        ("command_encoders", &hub.command_encoders),
        ("command_buffers", &hub.command_buffers),
        ("render_passes", &hub.render_passes),
        ("compute_passes", &hub.compute_passes),
        ("render_bundle_encoders", &hub.render_bundle_encoders),
        ("render_bundles", &hub.render_bundles),
        ("query_sets", &hub.query_sets),
        ("external_textures", &hub.external_textures),
    ];
    registries
        .iter()
        .map(|(name, r)| HubEntry {
            name: (*name).to_owned(),
            allocated: r.num_allocated as u64,
            kept_from_user: r.num_kept_from_user as u64,
            released_from_user: r.num_released_from_user as u64,
            element_size: r.element_size as u64,
        })
        .collect()
}

/// Whether `backend` keeps a counter, as wgpu-hal 30 does: object counts on
/// every native backend, memory bytes on Vulkan and DX12, allocation counts
/// on none.
fn kept(backend: wgpu::Backend, counter: &str) -> bool {
    match counter {
        "memory_allocations" => false,
        "buffer_memory" | "texture_memory" => {
            matches!(backend, wgpu::Backend::Vulkan | wgpu::Backend::Dx12)
        }
        _ => !matches!(backend, wgpu::Backend::Noop | wgpu::Backend::BrowserWebGpu),
    }
}

fn hal_counters(c: &wgpu::wgt::HalCounters, backend: wgpu::Backend) -> HalCounters {
    let all = [
        ("buffers", &c.buffers),
        ("textures", &c.textures),
        ("texture_views", &c.texture_views),
        ("samplers", &c.samplers),
        ("bind_group_layouts", &c.bind_group_layouts),
        ("bind_groups", &c.bind_groups),
        ("pipeline_layouts", &c.pipeline_layouts),
        ("shader_modules", &c.shader_modules),
        ("render_pipelines", &c.render_pipelines),
        ("compute_pipelines", &c.compute_pipelines),
        ("command_encoders", &c.command_encoders),
        ("query_sets", &c.query_sets),
        ("fences", &c.fences),
        ("buffer_memory", &c.buffer_memory),
        ("texture_memory", &c.texture_memory),
        ("memory_allocations", &c.memory_allocations),
    ];
    let values = all
        .iter()
        .map(|(name, counter)| {
            (
                (*name).to_owned(),
                kept(backend, name).then(|| counter.read() as i64),
            )
        })
        .collect();
    HalCounters { values }
}

/// The full diagnostics report of `gpu`: system, adapter, versions, our
/// object counts and wgpu's report.
pub fn report(gpu: &Gpu) -> Report {
    let mut report = Report::new();
    report
        .add(&SystemInfo::collect())
        .add(&adapter_section(gpu))
        .add(&Versions::collect())
        .add(&ObjectCounts::collect(gpu.tracker()))
        .add(&wgpu_section(gpu));
    report
}
