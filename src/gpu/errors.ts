// Errors that name what went wrong on the GPU: the kernel, the buffer, or the lost device.

export class GpuError extends Error {
  override name = 'GpuError';
}

/** A WGSL compile/validation failure, or a validation error raised by a batch of dispatches. */
export class GpuValidationError extends GpuError {
  override name = 'GpuValidationError';
}

export class GpuOutOfMemoryError extends GpuError {
  override name = 'GpuOutOfMemoryError';
}

export class GpuDeviceLostError extends GpuError {
  override name = 'GpuDeviceLostError';
}

/** A requested buffer or binding is larger than the device allows. */
export class GpuLimitError extends GpuError {
  override name = 'GpuLimitError';
}
