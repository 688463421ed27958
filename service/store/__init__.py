"""Implementations of the domain's store interface (`service.domain.store.Store`); SQLite is
the embedded one."""
