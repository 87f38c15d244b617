"""Wire codecs: the harness's messages to and from each provider's request/response shapes."""
