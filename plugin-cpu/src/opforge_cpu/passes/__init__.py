"""Graph passes of the CPU device that run on a static-shape model before emission, each in its
own module or package (``int8``: quantized regions of QDQ models to int8 kernels)."""
