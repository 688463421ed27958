"""What runs an upscale across machines: Dask distributed as the domain's segment pool
(`dask_segments`). Dask is an optional stack (the `cluster` extra), imported only when
AVATAR_DASK_SCHEDULER is set."""
