/* opforge CPU kernel ABI: how a third-party package gives the CPU device a compiled kernel.
 *
 * A plugin fills one `opforge_cpu_kernel` descriptor per op, wraps a pointer to it in a
 * PyCapsule named OPFORGE_CPU_KERNEL_CAPSULE_NAME (opforge_cpu_make_capsule below, or
 * PyCapsule_New directly) and registers that capsule through the `opforge_register_kernels`
 * hook:
 *
 *     register("CPU", "MyOp", my_module.kernel(), version="my_opset")
 *
 * The CPU executor then calls `compute` directly from its C++ loop, without the GIL and without
 * any Python in between. The descriptor starts with the ABI version; a descriptor built against
 * another version is refused with an error that names the plugin and both versions, because
 * the layout of everything after that field may differ.
 *
 * Plain C, no dependencies: any compiler and any binding tool (pybind11, nanobind, Cython, the
 * C API) can build against it. Get the folder with `opforge_cpu.get_include()`.
 */
#ifndef OPFORGE_CPU_KERNEL_ABI_H
#define OPFORGE_CPU_KERNEL_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bump on any change to the structs below. */
#define OPFORGE_CPU_KERNEL_ABI_VERSION 1u
#define OPFORGE_CPU_KERNEL_CAPSULE_NAME "opforge_cpu.kernel"

/* Element types, numbered as opforge.element_type.Type is ordered. */
typedef enum opforge_dtype {
  OPFORGE_BOOLEAN = 0, OPFORGE_F16 = 1, OPFORGE_BF16 = 2, OPFORGE_F32 = 3, OPFORGE_F64 = 4,
  OPFORGE_I8 = 5, OPFORGE_I16 = 6, OPFORGE_I32 = 7, OPFORGE_I64 = 8,
  OPFORGE_U8 = 9, OPFORGE_U16 = 10, OPFORGE_U32 = 11, OPFORGE_U64 = 12
} opforge_dtype;

/* A dense row-major tensor. At `create` time `data` is NULL (shapes are already known). */
typedef struct opforge_tensor {
  int32_t dtype;          /* opforge_dtype */
  int32_t rank;
  const int64_t* shape;   /* rank entries */
  void* data;
} opforge_tensor;

typedef enum opforge_attr_kind {
  OPFORGE_ATTR_NONE = 0, OPFORGE_ATTR_BOOL = 1, OPFORGE_ATTR_INT = 2, OPFORGE_ATTR_FLOAT = 3,
  OPFORGE_ATTR_STRING = 4, OPFORGE_ATTR_INTS = 5, OPFORGE_ATTR_FLOATS = 6
} opforge_attr_kind;

/* One attribute of the node (the op's attribute model, by field name). */
typedef struct opforge_attr {
  const char* name;
  int32_t kind;           /* opforge_attr_kind */
  int64_t count;          /* entries in ints/floats; 1 for scalars */
  const int64_t* ints;    /* BOOL, INT, INTS */
  const double* floats;   /* FLOAT, FLOATS */
  const char* string;     /* STRING */
} opforge_attr;

typedef struct opforge_node_info {
  const char* name;       /* the node's name in the model */
  const opforge_attr* attrs;
  int64_t num_attrs;
  const opforge_tensor* inputs;
  int64_t num_inputs;
  const opforge_tensor* outputs;
  int64_t num_outputs;
} opforge_node_info;

typedef struct opforge_cpu_kernel {
  /* Must be OPFORGE_CPU_KERNEL_ABI_VERSION; the executor reads it before anything else. */
  uint32_t abi_version;
  /* sizeof(opforge_cpu_kernel) as the plugin saw it. */
  uint32_t struct_size;
  /* Who this is, for messages: "my-dist MyOp". */
  const char* name;
  /* Build a per-node instance (attributes parsed, shapes checked). NULL + `err` on failure. */
  void* (*create)(const opforge_node_info* node, char* err, size_t err_len);
  /* Compute the outputs (pre-allocated, shapes from the op's shape inference). Called from
   * several requests at once with the same instance: keep the instance read-only.
   * Return 0 on success, anything else with a message in `err`. */
  int (*compute)(void* instance, const opforge_tensor* inputs, int64_t num_inputs,
                 opforge_tensor* outputs, int64_t num_outputs, char* err, size_t err_len);
  /* Free an instance from `create`. */
  void (*destroy)(void* instance);
} opforge_cpu_kernel;

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* OPFORGE_CPU_KERNEL_ABI_H */
