"""Package data for the simulator: the model config the demo reproduces (GLM-5-NVFP4)."""
