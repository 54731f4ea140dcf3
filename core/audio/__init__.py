"""Audio becomes model input: decoding and resampling (:mod:`core.audio.decode`), then Whisper's
log-mel spectrogram (:mod:`core.audio.mel`). A floor beside ``core.text``: it imports nothing above it."""
