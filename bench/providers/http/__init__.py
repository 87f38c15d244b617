"""The shared transport of the real-model providers: config, retries, streaming, concurrency."""
