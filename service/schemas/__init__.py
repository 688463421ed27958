"""Request and response bodies (msgspec Structs), named after what they carry."""
