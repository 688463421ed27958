"""Work that runs once per `serve`, beside the HTTP workers."""
