"""Model catalog, provisioning, the llama.cpp runtime and the ONNX embedder."""
