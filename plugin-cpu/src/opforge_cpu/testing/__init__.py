"""Testing helpers of the CPU plugin (not imported by the plugin itself)."""
