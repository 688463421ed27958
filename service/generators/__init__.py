"""Built-in media engines and backend clients, implementing the domain's interfaces: portraits
(`procedural`, `service.domain.generation.Generator`); speech (`espeak` text to speech, `sphinx`
speech to text, `openai_speech` the OpenAI-compatible backends of both, `speech_engines` the
choice among them; `service.domain.speech`); faces (`face_box` the built-in cascade,
`face_mesh` the optional landmark model, `face_finders` the choice, `portrait_face` the
portraits' own points; `service.domain.faces`)."""
