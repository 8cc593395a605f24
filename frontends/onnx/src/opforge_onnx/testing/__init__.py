"""Test helpers of opforge-onnx (a conformance backend module)."""
