"""The avatar-service HTTP service (Litestar app, store, workers and pages)."""
