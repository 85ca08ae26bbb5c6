// Shared declarations of the harness's native autograd.Function path.
//
// The extension is built by torch.utils.cpp_extension (see harness/native.py),
// so it uses torch's own pybind11, headers and ABI flags.
#pragma once

#include <torch/csrc/python_headers.h>

#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/utils/object_ptr.h>
#include <torch/csrc/utils/pybind.h>

#include <stdexcept>
#include <string>

namespace harness_native {

namespace py = pybind11;
using torch::autograd::Node;
using torch::autograd::SavedVariable;
using torch::autograd::Variable;
using torch::autograd::variable_list;
using torch::autograd::VariableInfo;

// Something the native path cannot run faithfully. Translated to the Python
// class harness.native.Unsupported at the module boundary; `what()` is the short,
// stable reason string ("tracing", "functorch transform", ...).
struct UnsupportedError : std::runtime_error {
  explicit UnsupportedError(const char* reason) : std::runtime_error(reason) {}
  explicit UnsupportedError(const std::string& reason) : std::runtime_error(reason) {}
};

// Sets the pending Python exception to harness.native.Unsupported(reason).
void set_unsupported_error(const char* reason);

// Registers the Python class used for UnsupportedError (done by the facade).
void register_unsupported_type(PyObject* type);

// A Python error is pending: keep it so it survives the autograd engine's
// thread hop (see torch's Note [Persisting PyErr state across autograd engine
// threads]) and unwind.
[[noreturn]] inline void throw_python_error() {
  ::python_error err;
  err.persist();
  throw std::move(err);
}

// Wraps a non-tuple into a 1-tuple; returns true if it did.
inline bool ensure_tuple(THPObjectPtr& obj) {
  if (PyTuple_Check(obj.get())) {
    return false;
  }
  PyObject* tuple = PyTuple_New(1);
  if (!tuple) {
    throw_python_error();
  }
  PyTuple_SET_ITEM(tuple, 0, obj.release());
  obj = tuple;
  return true;
}

// Borrowed references to objects of torch.autograd.function looked up once.
struct FunctionBaseAttrs {
  PyObject* base_setup_context; // _SingleLevelFunction.setup_context
  PyObject* base_backward; // Function.backward (== Function.vjp)
  PyObject* base_vjp; // Function.vjp
  PyObject* are_functorch_transforms_active; // torch._C._are_functorch_transforms_active
};
const FunctionBaseAttrs& function_base_attrs();

// Interned attribute names, created once under the GIL.
struct Names {
  PyObject* forward;
  PyObject* backward;
  PyObject* vjp;
  PyObject* jvp;
  PyObject* setup_context;
  PyObject* view_as;
  PyObject* backward_cls;
  PyObject* boxed_grads_call;
  PyObject* clear_saved_tensors_on_access;
};
const Names& names();

#ifdef HARNESS_SELFEVAL_FAULTS
// Test-only build variant (harness/selfeval/native.py builds it into its own cache
// directory; a normal build never compiles these lines). At most one seeded fault is
// active, chosen at run time by name; see docs/selfeval.md for the catalog.
bool seeded_fault(const char* name);
#endif

} // namespace harness_native
