"""Testing helpers of the GPU plugin (not imported by the plugin itself)."""
