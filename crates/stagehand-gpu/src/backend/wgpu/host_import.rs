//! Host memory the device copies to and from in place: Vulkan's
//! `VK_EXT_external_memory_host`, which makes a range of the process's own
//! memory a buffer the device reads and writes directly.
//!
//! wgpu's buffers live in memory wgpu allocates, so bytes that already sit
//! in host memory of the program's own (a decoder's frame, memory shared
//! with a display server) go through a copy into one of them on the way.
//! On a device that imports host memory, that memory is the copy's source
//! or destination itself: on a software adapter the one copy is the
//! device's, and on a GPU the device reads or writes it over the bus, as
//! it would a staging buffer.
//!
//! The device is opened with the extension where the adapter has it
//! ([`open`]); [`HostImport`] then makes the buffers. Everything else
//! (other backends, adapters without it) goes on as before.

#[cfg(any(windows, all(unix, not(target_vendor = "apple"))))]
pub(crate) use vulkan::{HostImport, open};

/// What an imported buffer holds on to: the memory it aliases, kept alive
/// until the device has destroyed the buffer.
///
/// # Safety
///
/// `as_ptr()` to `as_ptr() + len()` is memory of this process's, readable
/// and writable, that stays mapped (and the same memory) until the value
/// is dropped, and both methods give the same answer every time.
#[allow(unsafe_code)]
pub unsafe trait HostRegion: Send + Sync + 'static {
    /// The first byte.
    fn as_ptr(&self) -> *const u8;
    /// Bytes in the region.
    fn len(&self) -> usize;
    /// Whether the region is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

// SAFETY: a mapping stays mapped, at one address and length, until it is
// dropped.
#[allow(unsafe_code)]
unsafe impl HostRegion for memmap2::MmapMut {
    fn as_ptr(&self) -> *const u8 {
        <[u8]>::as_ptr(self)
    }
    fn len(&self) -> usize {
        <[u8]>::len(self)
    }
}

#[cfg(any(windows, all(unix, not(target_vendor = "apple"))))]
mod vulkan {
    use super::HostRegion;
    use crate::error::{Error, Result};
    use ash::vk;
    use std::ffi::c_void;
    use wgpu::hal::api::Vulkan;

    /// How a device imports host memory: its extension's entry point and
    /// the alignment it asks of a region's start and length.
    pub(crate) struct HostImport {
        ext: ash::ext::external_memory_host::DeviceFn,
        alignment: usize,
        /// The device's memory types that are host-coherent, as bits: an
        /// import of one needs no flush for the device to see the host's
        /// writes.
        coherent: u32,
    }

    impl std::fmt::Debug for HostImport {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("HostImport")
                .field("alignment", &self.alignment)
                .finish_non_exhaustive()
        }
    }

    /// Opens `adapter`'s device with `desc`, with host memory imports turned
    /// on where the adapter is a Vulkan one that has them; `None` where it is
    /// not (the caller opens the device as usual).
    #[allow(unsafe_code)] // wgpu's HAL: see each block
    pub(crate) fn open(
        adapter: &wgpu::Adapter,
        desc: &wgpu::DeviceDescriptor<'_>,
    ) -> Option<Result<(wgpu::Device, wgpu::Queue, HostImport), String>> {
        let name = ash::ext::external_memory_host::NAME;
        // SAFETY: the HAL adapter is only read here, while `adapter` lives.
        let hal = unsafe { adapter.as_hal::<Vulkan>() }?;
        // The import needs Vulkan 1.1 (its dependency, external memory, is
        // core there, as is the properties query below).
        let v1_1 = hal.physical_device_capabilities().properties().api_version
            >= vk::API_VERSION_1_1
            && hal.shared_instance().instance_api_version() >= vk::API_VERSION_1_1;
        if !v1_1 || !hal.physical_device_capabilities().supports_extension(name) {
            return None;
        }
        let experimental = desc.required_features & wgpu::Features::all_experimental_mask();
        if !experimental.is_empty() && !desc.experimental_features.is_enabled() {
            return Some(Err(format!(
                "experimental features asked for without enabling them: {experimental:?}"
            )));
        }
        if !adapter.features().contains(desc.required_features) {
            return Some(Err(format!(
                "features the adapter lacks: {:?}",
                desc.required_features - adapter.features()
            )));
        }
        let mut past = Vec::new();
        desc.required_limits
            .check_limits_with_fail_fn(&adapter.limits(), false, |name, _, _| past.push(name));
        if !past.is_empty() {
            return Some(Err(format!(
                "limits past the adapter's: {}",
                past.join(", ")
            )));
        }
        let alignment = import_alignment(&hal);
        let coherent = coherent_types(&hal);
        // SAFETY: the callback only adds an extension the adapter has (checked
        // above); features and limits were checked against the adapter's, as
        // `request_device` checks them.
        let opened = unsafe {
            hal.open_with_callback(
                desc.required_features,
                &desc.required_limits,
                &desc.memory_hints,
                Some(Box::new(move |args| args.extensions.push(name))),
            )
        };
        drop(hal);
        let opened = match opened {
            Ok(opened) => opened,
            Err(e) => return Some(Err(e.to_string())),
        };
        let ext = {
            let device = &opened.device;
            let instance = device.shared_instance().raw_instance();
            ash::ext::external_memory_host::Device::new(instance, device.raw_device())
                .fp()
                .clone()
        };
        // SAFETY: `opened` was opened from this adapter, with `desc`'s
        // features and limits.
        let made = unsafe { adapter.create_device_from_hal(opened, desc) };
        Some(
            made.map(|(device, queue)| {
                let import = HostImport {
                    ext,
                    alignment,
                    coherent,
                };
                (device, queue, import)
            })
            .map_err(|e| e.to_string()),
        )
    }

    /// The alignment the adapter asks of an imported region's start and
    /// length (at least a page).
    #[allow(unsafe_code)] // one query of the physical device
    fn import_alignment(hal: &wgpu::hal::vulkan::Adapter) -> usize {
        let mut host = vk::PhysicalDeviceExternalMemoryHostPropertiesEXT::default();
        let mut props = vk::PhysicalDeviceProperties2::default().push_next(&mut host);
        let instance = hal.shared_instance().raw_instance();
        // SAFETY: the physical device is the adapter's own, and the chain is
        // one structure the extension defines, which the adapter has.
        unsafe { instance.get_physical_device_properties2(hal.raw_physical_device(), &mut props) };
        let page = 4096;
        usize::try_from(host.min_imported_host_pointer_alignment)
            .unwrap_or(usize::MAX)
            .max(page)
    }

    /// The adapter's host-coherent memory types, as bits.
    #[allow(unsafe_code)] // one query of the physical device
    fn coherent_types(hal: &wgpu::hal::vulkan::Adapter) -> u32 {
        let instance = hal.shared_instance().raw_instance();
        // SAFETY: the physical device is the adapter's own.
        let memory =
            unsafe { instance.get_physical_device_memory_properties(hal.raw_physical_device()) };
        let count = (memory.memory_type_count as usize).min(memory.memory_types.len());
        memory.memory_types[..count]
            .iter()
            .enumerate()
            .filter(|(_, t)| {
                t.property_flags
                    .contains(vk::MemoryPropertyFlags::HOST_COHERENT)
            })
            .fold(0, |bits, (i, _)| bits | (1 << i))
    }

    impl HostImport {
        /// The memory type to import into among `types` (bits): a
        /// host-coherent one where there is one.
        fn preferred_type(&self, types: u32) -> u32 {
            match types & self.coherent {
                0 => types.trailing_zeros(),
                coherent => coherent.trailing_zeros(),
            }
        }

        /// The alignment a region's start and length must have.
        pub(crate) fn alignment(&self) -> usize {
            self.alignment
        }

        /// `region` as a buffer of `device` that copies read from and write
        /// to in place (`COPY_SRC | COPY_DST`), `region.len()` bytes.
        ///
        /// # Safety
        ///
        /// While the device may use the buffer (from the first submission
        /// that names it until that submission is done), nothing on the CPU
        /// writes the region, and nothing reads it while a copy into it may be
        /// running.
        #[allow(unsafe_code)] // raw Vulkan objects handed to wgpu; see each block
        pub(crate) unsafe fn import(
            &self,
            device: &wgpu::Device,
            region: Box<dyn HostRegion>,
            label: Option<&str>,
        ) -> Result<wgpu::Buffer> {
            let refuse = |why: String| Error::Validation {
                kind: crate::diag::ObjectKind::Buffer,
                label: crate::error::Label::of(label),
                message: why,
            };
            let (ptr, len) = (region.as_ptr(), region.len());
            if len == 0
                || !(ptr as usize).is_multiple_of(self.alignment)
                || !len.is_multiple_of(self.alignment)
            {
                return Err(refuse(format!(
                    "host memory at {ptr:p}, {len} bytes: imports need both a multiple of {}",
                    self.alignment
                )));
            }
            // SAFETY: the HAL device is only used in this call, while
            // `device` lives.
            let Some(hal) = (unsafe { device.as_hal::<Vulkan>() }) else {
                return Err(refuse("not a Vulkan device".into()));
            };
            let raw = hal.raw_device().clone();
            let handle = vk::ExternalMemoryHandleTypeFlags::HOST_ALLOCATION_EXT;
            let mut host = vk::MemoryHostPointerPropertiesEXT::default();
            // SAFETY: the entry point was loaded from this device; the pointer
            // is the region's, aligned as the device asks (checked above).
            let found = unsafe {
                (self.ext.get_memory_host_pointer_properties_ext)(
                    raw.handle(),
                    handle,
                    ptr.cast::<c_void>(),
                    &mut host,
                )
            };
            if found != vk::Result::SUCCESS {
                return Err(refuse(format!(
                    "the device cannot import this memory: {found:?}"
                )));
            }
            let mut external = vk::ExternalMemoryBufferCreateInfo::default().handle_types(handle);
            let info = vk::BufferCreateInfo::default()
                .size(len as u64)
                .usage(vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST)
                .sharing_mode(vk::SharingMode::EXCLUSIVE)
                .push_next(&mut external);
            // SAFETY: a valid create info on the live device.
            let buffer = unsafe { raw.create_buffer(&info, None) }
                .map_err(|e| refuse(format!("vkCreateBuffer: {e}")))?;
            // SAFETY: `buffer` was just made on this device.
            let needs = unsafe { raw.get_buffer_memory_requirements(buffer) };
            let types = needs.memory_type_bits & host.memory_type_bits;
            if types == 0 || needs.size > len as u64 {
                // SAFETY: made above, never used.
                unsafe { raw.destroy_buffer(buffer, None) };
                return Err(refuse(format!(
                    "the buffer needs {} bytes of memory types {:#x}; the import gives {len} of {:#x}",
                    needs.size, needs.memory_type_bits, host.memory_type_bits
                )));
            }
            let memory_type = self.preferred_type(types);
            let mut import = vk::ImportMemoryHostPointerInfoEXT::default()
                .handle_type(handle)
                .host_pointer(ptr.cast_mut().cast::<c_void>());
            let alloc = vk::MemoryAllocateInfo::default()
                .allocation_size(len as u64)
                .memory_type_index(memory_type)
                .push_next(&mut import);
            // SAFETY: the import names the region, which stays alive (it moves
            // into the buffer's drop callback below) until the memory is freed.
            let memory = match unsafe { raw.allocate_memory(&alloc, None) } {
                Ok(memory) => memory,
                Err(e) => {
                    // SAFETY: made above, never used.
                    unsafe { raw.destroy_buffer(buffer, None) };
                    return Err(refuse(format!("vkAllocateMemory (import): {e}")));
                }
            };
            // SAFETY: both are this device's, the memory as large as the buffer.
            if let Err(e) = unsafe { raw.bind_buffer_memory(buffer, memory, 0) } {
                // SAFETY: made above, never used.
                unsafe {
                    raw.destroy_buffer(buffer, None);
                    raw.free_memory(memory, None);
                }
                return Err(refuse(format!("vkBindBufferMemory: {e}")));
            }
            drop(hal);
            let owner = raw.clone();
            let release = Box::new(move || {
                // SAFETY: wgpu calls this once, when it destroys the buffer,
                // after the last submission that used it is done; the region
                // is dropped after the memory that aliases it is freed.
                unsafe {
                    owner.destroy_buffer(buffer, None);
                    owner.free_memory(memory, None);
                }
                drop(region);
            });
            // SAFETY: the buffer and its memory are owned by `release`, which
            // wgpu runs when it destroys the buffer; the buffer is never
            // mapped (no map usage is given).
            let hal_buffer =
                unsafe { wgpu::hal::vulkan::Buffer::from_raw_externally_owned(buffer, release) };
            let desc = wgpu::BufferDescriptor {
                label,
                size: len as u64,
                usage: wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            };
            // SAFETY: `hal_buffer` was made on `device`'s own Vulkan device,
            // with the usages `desc` names, and its memory bound.
            Ok(unsafe { device.create_buffer_from_hal::<Vulkan>(hal_buffer, &desc) })
        }
    }
}
