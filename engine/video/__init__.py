"""The video layer of the engine: everything that reads, checks or writes video files.

It sits on top of the kernels' face (`engine.fit`, `engine.resample`) and is the only part of
the product that imports PyAV. Callers use the re-exports of `engine` (`probe`, `plan`,
`upscale`, `VideoInfo`, `UpscaleResult`); the modules here are internal:

    probe      headers -> VideoInfo, with every header-visible input limit checked
    limits     the input limits and the checks that raise InvalidVideo
    h264       the H.264 sequence parameter set reader
    mp4        the MP4 `tkhd` display-matrix reader
    geometry   display orientation as numpy views, chroma siting offsets
    planes     one decoded frame resampled plane by plane into an output frame
    stages     threads and bounded channels between the pipeline stages
    output     the output MP4: libx264 settings, copied audio
    pipeline   `upscale`: decode -> resample -> encode + mux
    compose    `compose`: drawn frames and PCM -> H.264 + AAC MP4 (the generated videos)
    segments   one upscale as segments cut at closed-GOP keyframes, and their join
"""
