"""HTTP layer: one controller module per area, thin handlers over `service.domain`."""
