"""Graph passes of the CPU device that run on a static-shape model before emission, each in its
own module (``int8``: quantized convolutions and MatMuls to int8 kernels)."""
