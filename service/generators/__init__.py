"""Image generators: implementations of `service.domain.generation.Generator`. The built-in one
(`procedural`) draws stylised portraits with numpy; a model-backed generator would sit here too."""
