"""The loopback server: both wire protocols (Anthropic, OpenAI) in front of the simulated
model, so the real SDKs can be exercised offline."""
