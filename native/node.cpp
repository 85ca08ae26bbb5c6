// The native autograd Node (backward through the Function's Python backward)
// and the parts of the ctx that touch it. Mirrors PyNode in torch's
// torch/csrc/autograd/python_function.cpp.
#include "node.h"

#include <c10/core/DeviceGuard.h>
#include <c10/util/irange.h>
#include <torch/csrc/autograd/python_cpp_function.h>
#include <torch/csrc/utils/pyobject_preservation.h>

#include <utility>

namespace harness_native {

namespace {

PyObject* unsupported_type = nullptr; // strong, set once by the facade

PyObject* intern(const char* s) {
  PyObject* name = PyUnicode_InternFromString(s);
  TORCH_INTERNAL_ASSERT(name, "could not intern ", s);
  return name;
}

} // namespace

void register_unsupported_type(PyObject* type) {
  Py_XINCREF(type);
  Py_XSETREF(unsupported_type, type);
}

void set_unsupported_error(const char* reason) {
  PyErr_SetString(unsupported_type ? unsupported_type : PyExc_RuntimeError, reason);
}

const Names& names() {
  // Intentionally leaked: lives as long as the interpreter.
  static const Names n{
      intern("forward"),
      intern("backward"),
      intern("vjp"),
      intern("jvp"),
      intern("setup_context"),
      intern("view_as"),
      intern("_backward_cls"),
      intern("boxed_grads_call"),
      intern("clear_saved_tensors_on_access")};
  return n;
}

const FunctionBaseAttrs& function_base_attrs() {
  static const FunctionBaseAttrs attrs = [] {
    py::module_ mod = py::module_::import("torch.autograd.function");
    py::object single = mod.attr("_SingleLevelFunction");
    py::object function = mod.attr("Function");
    return FunctionBaseAttrs{
        py::object(single.attr("setup_context")).release().ptr(),
        py::object(function.attr("backward")).release().ptr(),
        py::object(function.attr("vjp")).release().ptr(),
        py::object(py::module_::import("torch._C").attr("_are_functorch_transforms_active"))
            .release()
            .ptr()};
  }();
  return attrs;
}

py::object NativeCtx::saved_tensors() const {
  if (saved_for_forward) {
    return saved_for_forward;
  }
  return unpack_saved();
}

py::object NativeCtx::unpack_saved() const {
  c10::intrusive_ptr<Node> saved_for = node.lock();
  auto* native = static_cast<NativeNode*>(saved_for.get());
  TORCH_CHECK(native && !native->has_freed_buffers, torch::autograd::ERR_BACKWARD_TWICE);
  const auto& saved = native->saved_variables;
  THPObjectPtr result(PyTuple_New(static_cast<Py_ssize_t>(saved.size())));
  if (!result) {
    throw_python_error();
  }
  for (const auto i : c10::irange(saved.size())) {
    // unpack() checks the version counter and re-attaches this node as the
    // grad_fn of saved outputs (saved without it to avoid a cycle).
    PyObject* value = THPVariable_Wrap(saved[i].unpack(saved_for));
    if (!value) {
      throw_python_error();
    }
    PyTuple_SET_ITEM(result.get(), i, value);
  }
  return py::reinterpret_steal<py::object>(result.release());
}

NativeNode::NativeNode(PyObject* cls, PyObject* ctx_obj, NativeCtx* ctx)
    : cls_(cls), ctx_obj_(ctx_obj), ctx_(ctx) {
  Py_INCREF(cls_);
  Py_INCREF(ctx_obj_);
}

NativeNode::~NativeNode() {
  drop_python_references();
}

void NativeNode::drop_python_references() noexcept {
  if (!cls_ && !ctx_obj_) {
    return;
  }
  // Like PyNode::release_variables: after interpreter shutdown, leak.
  if (!Py_IsInitialized()) {
    return;
  }
  pybind11::gil_scoped_acquire gil;
  saved_variables.clear();
  has_freed_buffers = true;
  ctx_ = nullptr;
  Py_CLEAR(ctx_obj_);
  Py_CLEAR(cls_);
}

// The last strong reference is gone. The ctx holds a weak reference to this
// node, so the destructor may run much later: drop the Python references now.
void NativeNode::release_resources() {
  drop_python_references();
  Node::release_resources();
}

void NativeNode::release_variables() {
  if (!Py_IsInitialized()) {
    return;
  }
  pybind11::gil_scoped_acquire gil;
  saved_variables.clear();
  has_freed_buffers = true;
}

std::string NativeNode::name() const {
  // Same name as torch's PyNode: the tp_name of cls._backward_cls, i.e.
  // "<Function>Backward", so error messages compare equal across paths.
  pybind11::gil_scoped_acquire gil;
  if (!cls_) {
    return "NativeFunctionBackward";
  }
  THPObjectPtr backward_cls(PyObject_GetAttr(cls_, names().backward_cls));
  if (!backward_cls || !PyType_Check(backward_cls.get())) {
    PyErr_Clear();
    return std::string(reinterpret_cast<PyTypeObject*>(cls_)->tp_name) + "Backward";
  }
  return reinterpret_cast<PyTypeObject*>(backward_cls.get())->tp_name;
}

void NativeNode::compiled_args(torch::autograd::CompiledNodeArgs& /*args*/) const {
  pybind11::gil_scoped_acquire gil;
  set_unsupported_error("compiled autograd");
  throw_python_error();
}

namespace {

using torch::autograd::THPCppFunction;

// The type of a native node's grad_fn object: torch's own Python wrapper of a
// C++ node (THPCppFunction: name(), next_functions, register_hook, ... as the
// wrapper functionToPyObject would make on first access) plus the ctx in its
// tp_traverse. Zero-initialized, then filled like torch's C++ node types. Named
// like torch's default wrapper type, "CppFunction", which torch's tensor repr
// replaces by node->name() ("grad_fn=<FBackward>", as on eager).
PyTypeObject grad_fn_type{};

// torch's THPVariable tp_traverse visits a grad_fn's PyObject only while the
// tensor's sole owner is that Python object and the node's sole other owner is
// the PyObject (use_count() == 2): then the tensor's and the node's references
// to it are accounted for. The ctx belongs to the node, and this object owns
// the node; report the ctx under the same condition (at most this object and
// one tensor own the node), so it is reported only when the node dies with
// whatever gc finds unreachable. traverse_node adds the Python hooks, as
// torch's THPCppFunction_traverse does.
int grad_fn_traverse(PyObject* self, visitproc visit, void* arg) {
  auto& node = reinterpret_cast<THPCppFunction*>(self)->cdata;
  if (node && node.use_count() <= 2) {
    Py_VISIT(static_cast<NativeNode*>(node.get())->ctx_obj());
  }
  return torch::autograd::traverse_node(node, visit, arg);
}

} // namespace

void init_grad_fn_type() {
  torch::autograd::_initFunctionPyTypeObject(
      grad_fn_type, "CppFunction", nullptr, nullptr);
  grad_fn_type.tp_traverse = grad_fn_traverse;
}

c10::intrusive_ptr<Node> wrap_in_grad_fn(c10::intrusive_ptr<NativeNode> node) {
  THPObjectPtr obj(grad_fn_type.tp_alloc(&grad_fn_type, 0));
  if (!obj) {
    throw_python_error();
  }
  auto& owned = reinterpret_cast<THPCppFunction*>(obj.get())->cdata;
  new (&owned) c10::intrusive_ptr<Node>(std::move(node));
  torch::utils::PyObjectPreservation::init_fresh_nonatomic(*owned, obj.get());
  // The copy makes the node shared, so it now holds obj (refcount 2 after the
  // incref); obj's own reference is dropped on return.
  return owned;
}

namespace {

// BackwardCFunction._get_user_fn: the user's backward, or vjp if overridden.
THPObjectPtr user_backward_fn(PyObject* cls) {
  const auto& base = function_base_attrs();
  THPObjectPtr backward_fn(PyObject_GetAttr(cls, names().backward));
  if (!backward_fn) {
    throw_python_error();
  }
  THPObjectPtr vjp_fn(PyObject_GetAttr(cls, names().vjp));
  if (!vjp_fn) {
    throw_python_error();
  }
  const bool backward_overridden = backward_fn.get() != base.base_backward;
  const bool vjp_overridden = vjp_fn.get() != base.base_vjp;
  TORCH_CHECK(
      !(backward_overridden && vjp_overridden),
      "Implementing both 'backward' and 'vjp' for a custom Function is not allowed. "
      "You should only implement one of them.");
  return vjp_overridden ? std::move(vjp_fn) : std::move(backward_fn);
}

} // namespace

// Mirrors PyNode::apply (+ to_py_args / to_variable_list).
variable_list NativeNode::apply(variable_list&& grads) {
  pybind11::gil_scoped_acquire gil;
  at::OptionalDeviceGuard device_guard;
  TORCH_INTERNAL_ASSERT(ctx_obj_ && cls_, "native node used after release");

  const auto num_grads = grads.size();
  THPObjectPtr args(PyTuple_New(static_cast<Py_ssize_t>(num_grads + 1)));
  if (!args) {
    throw_python_error();
  }
  Py_INCREF(ctx_obj_);
  PyTuple_SET_ITEM(args.get(), 0, ctx_obj_);
  for (const auto i : c10::irange(num_grads)) {
    PyObject* grad = nullptr;
    // Undefined grads are materialized as zeros unless set_materialize_grads(False);
    // a non-tensor output has an empty VariableInfo, whose zeros() is undefined
    // (None).
    bool materialize = ctx_->materialize_grads;
#ifdef HARNESS_SELFEVAL_FAULTS
    materialize |= seeded_fault("native_materialize_grads_ignored");
#endif
    if (grads[i].defined() || !materialize ||
        (input_metadata(i).was_default_constructed() && !ctx_->materialize_non_diff_grads)) {
      grad = THPVariable_Wrap(std::move(grads[i]));
    } else {
      Variable zeros;
      {
        pybind11::gil_scoped_release no_gil;
        zeros = output_info[i].zeros(device_guard);
      }
      grad = THPVariable_Wrap(std::move(zeros));
    }
    if (!grad) {
      throw_python_error();
    }
    PyTuple_SET_ITEM(args.get(), static_cast<Py_ssize_t>(i + 1), grad);
  }
  grads.clear();

  THPObjectPtr user_fn = user_backward_fn(cls_);
  THPObjectPtr result(PyObject_CallObject(user_fn.get(), args.get()));
  args = nullptr;
  if (!result) {
    throw_python_error();
  }
  ensure_tuple(result);

  auto num_outputs = PyTuple_GET_SIZE(result.get());
  const auto num_forward_inputs = static_cast<Py_ssize_t>(is_variable_input.size());
  // Returning too many results is ok, but only as long as they're all None.
  if (num_outputs > num_forward_inputs) {
    bool all_none = true;
    for (const auto i : c10::irange(num_forward_inputs, num_outputs)) {
      all_none &= PyTuple_GET_ITEM(result.get(), i) == Py_None;
    }
    if (all_none) {
      num_outputs = num_forward_inputs;
      result = PyTuple_GetSlice(result.get(), 0, num_forward_inputs);
      if (!result) {
        throw_python_error();
      }
    }
  }
  TORCH_CHECK(
      num_outputs == num_forward_inputs,
      "function ",
      name(),
      " returned an incorrect number of gradients (expected ",
      num_forward_inputs,
      ", got ",
      num_outputs,
      ")");

  variable_list input_grads;
  input_grads.reserve(num_outputs);
  for (const auto i : c10::irange(num_outputs)) {
    PyObject* output = PyTuple_GET_ITEM(result.get(), i);
    if (!is_variable_input[i]) {
      TORCH_CHECK(
          output == Py_None,
          "function ",
          name(),
          " returned a gradient different than None at position ",
          i + 1,
          ", but the corresponding forward input was not a Variable");
      continue;
    }
    if (output == Py_None) {
      input_grads.emplace_back();
    } else {
      TORCH_CHECK(
          THPVariable_Check(output),
          "expected Variable or None (got ",
          Py_TYPE(output)->tp_name,
          ")");
      input_grads.emplace_back(THPVariable_Unpack(output));
    }
  }
  return input_grads;
}

} // namespace harness_native
