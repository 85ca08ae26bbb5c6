// The templated apply core, instantiated for the owned and borrowed holders.
// Step for step it follows THPFunction_apply, process_outputs, _wrap_outputs,
// _get_tensors_to_save and _save_variables in torch's
// torch/csrc/autograd/python_function.cpp; the comments say where it differs.
#include "apply.h"

#include "node.h"

#include <ATen/SequenceNumber.h>
#include <ATen/record_function.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/irange.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/jit/frontend/tracer.h>
#include <torch/headeronly/version.h>

#include <optional>

namespace harness_native {

namespace {

using detail::ImplSet;
using torch::autograd::_jvp_fn_t;
using torch::autograd::_view_as_self_fn_t;
using torch::autograd::optional_variable_list;

// torch < 2.14 raises the THPFunction_assert messages below cut short: it
// passes their arguments to a printf-style formatter whose format strings have
// no conversions ("mark_dirty can only accept variables, but argument ").
// torch 2.14 prints them. Raise the text the installed torch raises.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 14)
#define HARNESS_ASSERT_ARGS(...) , __VA_ARGS__
#else
#define HARNESS_ASSERT_ARGS(...)
#endif

bool class_flag(PyObject* cls, PyObject* name) {
  THPObjectPtr value(PyObject_GetAttr(cls, name));
  if (!value) {
    PyErr_Clear(); // not a Function attribute on this torch version
    return false;
  }
  const int truth = PyObject_IsTrue(value.get());
  if (truth < 0) {
    throw_python_error();
  }
  return truth != 0;
}

// What the native path cannot run faithfully: refuse instead of guessing.
void check_supported(PyObject* cls) {
  if (torch::jit::tracer::isTracing()) {
    // torch records a prim::PythonOp node; the native path does not trace.
    throw UnsupportedError("tracing");
  }
  // The same test torch's Function.apply makes before handing the call to
  // custom_function_call (ATen/functorch/DynamicLayer.h is not includable
  // from an extension: it needs nlohmann/json).
  THPObjectPtr transforms_active(
      PyObject_CallNoArgs(function_base_attrs().are_functorch_transforms_active));
  if (!transforms_active) {
    throw_python_error();
  }
  if (transforms_active.get() == Py_True) {
    throw UnsupportedError("functorch transform");
  }
  if (class_flag(cls, names().boxed_grads_call)) {
    throw UnsupportedError("boxed_grads_call");
  }
  if (class_flag(cls, names().clear_saved_tensors_on_access)) {
    throw UnsupportedError("clear_saved_tensors_on_access");
  }
}

NativeCtx& new_ctx(py::object& ctx_obj, PyObject* cls) {
  auto owned = std::make_unique<NativeCtx>();
  owned->forward_cls = py::reinterpret_borrow<py::object>(cls);
  NativeCtx* raw = owned.get();
  ctx_obj = py::cast(std::move(owned));
  return *raw;
}

const ImplSet& empty_set() {
  static const ImplSet empty;
  return empty;
}

// A ctx record (what a ctx.mark_* / save_for_* call stored), checked to be a
// tuple as torch's THPFunction_assert does; `attr` names it in the message.
PyObject* recorded_tuple(const py::object& record, const char* attr) {
  PyObject* tuple = record.ptr();
  TORCH_CHECK(
      PyTuple_Check(tuple),
      "autograd internal error: ",
      attr,
      " attribute is expected to be a tuple but is " HARNESS_ASSERT_ARGS(Py_TYPE(tuple)->tp_name));
  return tuple;
}

// A ctx.mark_*(...) record -> set of TensorImpls; clears the record.
// `unpack(i, obj)` checks element i (raising torch's message) and returns its tensor.
template <class Unpack>
ImplSet take_impl_set(py::object& record, const char* attr, Unpack&& unpack) {
  ImplSet set;
  if (!record) {
    return set;
  }
  PyObject* tuple = recorded_tuple(record, attr);
  const auto num = PyTuple_GET_SIZE(tuple);
  set.reserve(num);
  for (const auto i : c10::irange(num)) {
    set.insert(unpack(i, PyTuple_GET_ITEM(tuple, i)).unsafeGetTensorImpl());
  }
  record = py::object();
  return set;
}

// ctx.mark_non_differentiable(...) -> set of TensorImpls; clears the record.
ImplSet parse_non_differentiable(NativeCtx& ctx) {
#ifdef HARNESS_SELFEVAL_FAULTS
  if (seeded_fault("native_non_differentiable_ignored")) {
    ctx.non_differentiable = py::object(); // the outputs get a grad_fn after all
    return {};
  }
#endif
  return take_impl_set(
      ctx.non_differentiable,
      "non_differentiable",
      [](Py_ssize_t /*i*/, PyObject* t) -> const at::Tensor& {
        TORCH_CHECK(
            THPVariable_Check(t),
            "mark_non_differentiable only accepts variable arguments, but got "
            HARNESS_ASSERT_ARGS(Py_TYPE(t)->tp_name));
        return THPVariable_Unpack(t);
      });
}

// ctx.mark_dirty(...) -> set of TensorImpls, bumping each version counter;
// clears the record.
ImplSet mark_dirty(NativeCtx& ctx) {
#ifdef HARNESS_SELFEVAL_FAULTS
  if (seeded_fault("native_mark_dirty_ignored")) {
    ctx.dirty_tensors = py::object(); // no version bump, outputs not rebased
    return {};
  }
#endif
  return take_impl_set(
      ctx.dirty_tensors,
      "dirty_tensors",
      []([[maybe_unused]] Py_ssize_t i, PyObject* obj) -> const at::Tensor& {
        TORCH_CHECK(
            THPVariable_Check(obj),
            "mark_dirty can only accept variables, but argument "
            HARNESS_ASSERT_ARGS(i, " is of type ", Py_TYPE(obj)->tp_name));
        const auto& tensor = THPVariable_Unpack(obj);
        torch::autograd::impl::bump_version(tensor);
        return tensor;
      });
}

// _get_tensors_to_save: what save_for_backward recorded; with setup_context,
// also which TensorImpls are saved (returning an input as-is and saving it is
// an error then).
void get_tensors_to_save(
    NativeCtx& ctx,
    ImplSet& to_save_if_setup_context,
    std::vector<std::optional<at::Tensor>>& tensors_to_save,
    bool overridden_setup_context,
    bool is_executable) {
  if (ctx.saved_for_forward && overridden_setup_context) {
    PyObject* tuple = recorded_tuple(ctx.saved_for_forward, "saved_for_forward");
    for (const auto i : c10::irange(PyTuple_GET_SIZE(tuple))) {
      PyObject* obj = PyTuple_GET_ITEM(tuple, i);
      if (THPVariable_Check(obj)) {
        to_save_if_setup_context.insert(THPVariable_Unpack(obj).unsafeGetTensorImpl());
      }
    }
  }
  if (!ctx.to_save) {
    return;
  }
  PyObject* tuple = recorded_tuple(ctx.to_save, "to_save");
  const auto num_saved = PyTuple_GET_SIZE(tuple);
  for (const auto i : c10::irange(num_saved)) {
    PyObject* obj = PyTuple_GET_ITEM(tuple, i);
    if (obj == Py_None) {
      tensors_to_save.emplace_back(std::nullopt);
    } else if (THPVariable_Check(obj)) {
      const auto& tensor = THPVariable_Unpack(obj);
      if (overridden_setup_context) {
        to_save_if_setup_context.insert(tensor.unsafeGetTensorImpl());
      }
      if (is_executable) {
        tensors_to_save.emplace_back(tensor);
      }
    } else if (is_executable) {
      TORCH_CHECK_TYPE(
          false,
          "save_for_backward can only save variables, but argument ",
          i,
          " is of type ",
          Py_TYPE(obj)->tp_name);
    }
  }
  ctx.to_save = py::object();
}

// _save_variables: outputs are saved with is_output=true so the SavedVariable
// does not own this node (no cycle); default saved_tensors_hooks apply inside
// the SavedVariable constructor, as in torch.
void save_variables(
    const std::vector<std::optional<at::Tensor>>& tensors_to_save,
    NativeNode& node,
    PyObject* outputs) {
  if (tensors_to_save.empty()) {
    return;
  }
  const auto num_outputs = PyTuple_GET_SIZE(outputs);
  ImplSet output_impls;
  output_impls.reserve(num_outputs);
  for (const auto i : c10::irange(num_outputs)) {
    PyObject* obj = PyTuple_GET_ITEM(outputs, i);
    if (THPVariable_Check(obj)) {
      output_impls.insert(THPVariable_Unpack(obj).unsafeGetTensorImpl());
    }
  }
  node.saved_variables.clear();
  node.saved_variables.reserve(tensors_to_save.size());
  for (const auto& tensor : tensors_to_save) {
    if (!tensor.has_value()) {
      node.saved_variables.emplace_back();
    } else {
      const bool is_output = output_impls.count(tensor->unsafeGetTensorImpl()) > 0;
      node.saved_variables.emplace_back(*tensor, is_output);
    }
  }
#ifdef HARNESS_SELFEVAL_FAULTS
  if (seeded_fault("native_saved_released_early")) {
    node.saved_variables.front().reset_data(); // as if backward had already run
  }
#endif
}

// The user jvp callback, handed to libtorch's _wrap_outputs. It receives owned
// lists in both designs (libtorch materializes them from borrowed handles).
_jvp_fn_t make_jvp_fn(NativeNode* node) {
  return [node](variable_list inputs, variable_list grad_inputs) -> variable_list {
    pybind11::gil_scoped_acquire gil;
    const auto& is_variable_input = node->is_variable_input;
    NativeCtx& ctx = *node->ctx();
    const auto num_args = is_variable_input.size();
    THPObjectPtr py_args(PyTuple_New(static_cast<Py_ssize_t>(num_args + 1)));
    if (!py_args) {
      throw_python_error();
    }
    Py_INCREF(node->ctx_obj());
    PyTuple_SET_ITEM(py_args.get(), 0, node->ctx_obj());
    size_t variable_idx = 0;
    for (const auto i : c10::irange(num_args)) {
      PyObject* tangent = nullptr;
      if (is_variable_input[i]) {
        const auto& grad = grad_inputs[variable_idx];
        bool materialize = ctx.materialize_grads;
#ifdef HARNESS_SELFEVAL_FAULTS
        materialize |= seeded_fault("native_materialize_grads_ignored");
#endif
        if (grad.defined() || !materialize ||
            !torch::autograd::isDifferentiableType(inputs[variable_idx].scalar_type())) {
          tangent = THPVariable_Wrap(grad);
        } else {
          tangent = THPVariable_Wrap(at::zeros_like(inputs[variable_idx]));
        }
        if (!tangent) {
          throw_python_error();
        }
        ++variable_idx;
      } else {
        tangent = Py_NewRef(Py_None);
      }
      PyTuple_SET_ITEM(py_args.get(), static_cast<Py_ssize_t>(i + 1), tangent);
    }

    THPObjectPtr jvp_fn(PyObject_GetAttr(node->cls(), names().jvp));
    if (!jvp_fn) {
      throw_python_error();
    }
    THPObjectPtr result(PyObject_CallObject(jvp_fn.get(), py_args.get()));
    if (!result) {
      throw_python_error();
    }
    ensure_tuple(result);
    // The count is checked by _process_forward_mode_AD.
    const auto num_outputs = PyTuple_GET_SIZE(result.get());
    variable_list results;
    results.reserve(num_outputs);
    for (const auto i : c10::irange(num_outputs)) {
      PyObject* output = PyTuple_GET_ITEM(result.get(), i);
      if (output == Py_None) {
        results.emplace_back();
      } else {
        TORCH_CHECK(
            THPVariable_Check(output),
            "expected Variable or None (got ",
            Py_TYPE(output)->tp_name,
            ") for grad output ",
            i,
            ".");
        results.emplace_back(THPVariable_Unpack(output));
      }
    }
    return results;
  };
}

// x.view_as(x) through Python, so __torch_function__ still applies.
at::Tensor view_as_self(const at::Tensor& x) {
  pybind11::gil_scoped_acquire gil;
  THPObjectPtr py_x(THPVariable_Wrap(x));
  if (!py_x) {
    throw_python_error();
  }
  THPObjectPtr result(PyObject_CallMethodOneArg(py_x.get(), names().view_as, py_x.get()));
  if (!result) {
    throw_python_error();
  }
  return THPVariable_Unpack(result.get());
}

// The single point where the two designs differ in what they hand libtorch.
template <class Inputs>
optional_variable_list call_wrap_outputs(
    const Inputs& inputs,
    const ImplSet& non_differentiable,
    const ImplSet& dirty_inputs,
    at::ArrayRef<std::optional<Variable>> raw_outputs,
    const c10::intrusive_ptr<Node>& cdata,
    const _jvp_fn_t& jvp_user_function,
    const ImplSet& to_save_if_setup_context,
    bool pure_view,
    c10::intrusive_ptr<Node>& attached_node) {
  static const _view_as_self_fn_t view_as_self_fn = view_as_self;
  decltype(auto) input_vars = inputs.for_wrap_outputs();
  // The arguments both overload families share, then the trailing ones.
  const auto wrap = [&](auto&... trailing) {
    return torch::autograd::_wrap_outputs(
        input_vars,
        non_differentiable,
        dirty_inputs,
        raw_outputs,
        cdata,
        jvp_user_function,
        to_save_if_setup_context,
        view_as_self_fn,
        pure_view,
        trailing...);
  };
  if constexpr (kWrapOutputsReportsAttachedNode) {
    return wrap(attached_node);
  } else {
    attached_node = cdata;
    return wrap();
  }
}

// torch >= 2.14 runs torch.autograd.graph.node_creation_hook callbacks once
// the node is complete (after its saved variables are stored).
template <class NodePtr>
void fire_creation_hooks(const NodePtr& attached_node) {
  if constexpr (kWrapOutputsReportsAttachedNode) {
    if (attached_node) {
      fire_node_creation_hooks(attached_node); // found by ADL in torch::autograd
    }
  }
}

#ifdef HARNESS_SELFEVAL_FAULTS
// The tensor of a one-element list, or nullptr where `obj` is no such list. For
// "native_listed_output_tracked" (such an output wrapped as if returned at the top level: eager's
// _wrap_outputs sees only top-level tensors) and "native_listed_argument_counted" (apply_function).
PyObject* listed_tensor(PyObject* obj) {
  if (PyList_Check(obj) && PyList_GET_SIZE(obj) == 1 && THPVariable_Check(PyList_GET_ITEM(obj, 0))) {
    return PyList_GET_ITEM(obj, 0);
  }
  return nullptr;
}
#endif

// process_outputs + the Python-side _wrap_outputs of python_function.cpp.
template <class Inputs>
PyObject* process_outputs(
    NativeNode& node,
    const c10::intrusive_ptr<Node>& node_ptr,
    const Inputs& inputs,
    THPObjectPtr raw_output,
    bool is_executable,
    bool overridden_setup_context) {
  NativeCtx& ctx = *node.ctx();
  const bool unpack_output = ensure_tuple(raw_output);
  const auto num_outputs = PyTuple_GET_SIZE(raw_output.get());
  THPObjectPtr outputs(PyTuple_New(num_outputs));
  if (!outputs) {
    throw_python_error();
  }
  node.clear_input_metadata();

  ImplSet to_save_if_setup_context;
  std::vector<std::optional<at::Tensor>> tensors_to_save;
  get_tensors_to_save(
      ctx, to_save_if_setup_context, tensors_to_save, overridden_setup_context, is_executable);

  if (is_executable) {
    node.output_info.clear();
    node.output_info.reserve(num_outputs);
  }
  const ImplSet non_differentiable = parse_non_differentiable(ctx);
  const ImplSet dirty_inputs = mark_dirty(ctx);

  std::vector<std::optional<Variable>> raw_output_vars;
  raw_output_vars.reserve(num_outputs);
#ifdef HARNESS_SELFEVAL_FAULTS
  const bool track_listed = seeded_fault("native_listed_output_tracked");
#endif
  for (const auto i : c10::irange(num_outputs)) {
    PyObject* obj = PyTuple_GET_ITEM(raw_output.get(), i);
#ifdef HARNESS_SELFEVAL_FAULTS
    if (track_listed && listed_tensor(obj) != nullptr) {
      obj = listed_tensor(obj);
    }
#endif
    if (THPVariable_Check(obj)) {
      raw_output_vars.emplace_back(THPVariable_Unpack(obj));
    } else {
      raw_output_vars.emplace_back();
    }
  }

  const _jvp_fn_t jvp_user_function = make_jvp_fn(&node);
  static const c10::intrusive_ptr<Node> no_node;
  c10::intrusive_ptr<Node> attached_node;
  auto wrapped_outputs = call_wrap_outputs(
      inputs,
      non_differentiable,
      dirty_inputs,
      raw_output_vars,
      is_executable ? node_ptr : no_node,
      jvp_user_function,
      to_save_if_setup_context,
      ctx.pure_view,
      attached_node);

  for (const auto i : c10::irange(num_outputs)) {
    PyObject* obj = PyTuple_GET_ITEM(raw_output.get(), i);
    auto& wrapped_output = wrapped_outputs[i];
#ifdef HARNESS_SELFEVAL_FAULTS
    PyObject* const list = obj;
    if (track_listed && listed_tensor(obj) != nullptr) {
      obj = listed_tensor(obj);
    }
#endif
    if (!THPVariable_Check(obj) || !wrapped_output.has_value()) {
      // Non-tensor outputs are returned as they are.
      if (is_executable) {
        node.output_info.emplace_back();
      }
      PyTuple_SET_ITEM(outputs.get(), i, Py_NewRef(obj));
    } else {
      if (is_executable) {
        // Undefined grads of differentiable nested outputs need zeros_like().
        const bool is_differentiable =
            non_differentiable.count(wrapped_output->unsafeGetTensorImpl()) == 0 &&
            torch::autograd::isDifferentiableType(wrapped_output->scalar_type());
        const bool use_zeros_like =
            is_differentiable && num_outputs > 1 && wrapped_output->is_nested();
        node.output_info.emplace_back(wrapped_output.value(), use_zeros_like);
      }
      PyObject* wrapped = THPVariable_Wrap(std::move(wrapped_output.value()));
      if (!wrapped) {
        throw_python_error();
      }
#ifdef HARNESS_SELFEVAL_FAULTS
      if (obj != list) { // the tracked tensor goes back into a list of its own
        PyObject* relisted = PyList_New(1);
        if (!relisted) {
          Py_DECREF(wrapped);
          throw_python_error();
        }
        PyList_SET_ITEM(relisted, 0, wrapped);
        wrapped = relisted;
      }
#endif
      PyTuple_SET_ITEM(outputs.get(), i, wrapped);
    }
  }

  // SavedVariables are made after wrapping: outputs must already carry their
  // grad_fn / forward grad.
  if (is_executable) {
    save_variables(tensors_to_save, node, outputs.get());
  } else {
    ctx.to_save = py::object();
    ctx.non_differentiable = py::object();
  }
  ctx.saved_for_forward = py::object();
  if (is_executable) {
    fire_creation_hooks(attached_node);
  }

  if (unpack_output) {
    return Py_NewRef(PyTuple_GET_ITEM(outputs.get(), 0));
  }
  return outputs.release();
}

} // namespace

template <class Inputs>
PyObject* apply_function(PyObject* cls, PyObject* args) {
  TORCH_CHECK_TYPE(
      PyType_Check(cls), "apply expects a torch.autograd.Function subclass, got ",
      Py_TYPE(cls)->tp_name);
  TORCH_CHECK_TYPE(PyTuple_Check(args), "apply expects the arguments as a tuple");
  check_supported(cls);

  const auto seq_id = at::sequence_number::peek();
  at::RecordFunction guard(at::RecordScope::FUNCTION);
  if (guard.isActive()) {
    guard.before(reinterpret_cast<PyTypeObject*>(cls)->tp_name, static_cast<int64_t>(seq_id));
  }

  // Unpack the arguments: tensors go to the holder under test.
  const auto num_args = PyTuple_GET_SIZE(args);
  Inputs inputs;
  inputs.reserve(num_args);
  std::vector<bool> is_variable_input;
  is_variable_input.reserve(num_args);
  THPObjectPtr needs_input_grad(PyTuple_New(num_args));
  if (!needs_input_grad) {
    throw_python_error();
  }
  bool any_requires_grad = false;
#ifdef HARNESS_SELFEVAL_FAULTS
  // "borrowed_use_after_release": the borrowed handles point into a copy that is
  // released once forward has run; later reads see the emptied slots.
  constexpr bool kBorrowed = std::is_same_v<Inputs, BorrowedInputs>;
  const bool use_after_release = kBorrowed && seeded_fault("native_borrowed_use_after_release");
  variable_list released_owner;
  released_owner.reserve(num_args); // no reallocation: the handles stay put until the release
  const bool needs_off_by_one = seeded_fault("native_needs_input_grad_off_by_one");
  const bool count_listed = seeded_fault("native_listed_argument_counted");
  std::vector<bool> requires_grad_of;
#endif
  for (const auto i : c10::irange(num_args)) {
    PyObject* arg = PyTuple_GET_ITEM(args, i);
    const bool is_variable = THPVariable_Check(arg);
    is_variable_input.push_back(is_variable);
    bool requires_grad = false;
    if (is_variable) {
      const auto& tensor = THPVariable_Unpack(arg);
#ifdef HARNESS_SELFEVAL_FAULTS
      if (use_after_release) {
        released_owner.push_back(tensor);
        inputs.push(released_owner.back());
      } else {
        inputs.push(tensor);
      }
#else
      inputs.push(tensor);
#endif
      requires_grad = tensor.requires_grad();
      any_requires_grad |= requires_grad;
    }
#ifdef HARNESS_SELFEVAL_FAULTS
    // "native_listed_argument_counted": a tensor passed in a one-element list makes the node
    // executable when it requires grad (torch's unpack_input sees a non-tensor there)
    if (count_listed && listed_tensor(arg) != nullptr) {
      any_requires_grad |= THPVariable_Unpack(listed_tensor(arg)).requires_grad();
    }
    requires_grad_of.push_back(requires_grad);
    if (needs_off_by_one) {
      continue; // filled below, one place off
    }
#endif
    PyTuple_SET_ITEM(needs_input_grad.get(), i, Py_NewRef(requires_grad ? Py_True : Py_False));
  }
#ifdef HARNESS_SELFEVAL_FAULTS
  if (needs_off_by_one) { // entry i reads argument i + 1's flag; the last reads False
    for (const auto i : c10::irange(num_args)) {
      const bool flag = i + 1 < num_args && requires_grad_of[i + 1];
      PyTuple_SET_ITEM(needs_input_grad.get(), i, Py_NewRef(flag ? Py_True : Py_False));
    }
  }
#endif
  const bool is_executable = torch::autograd::GradMode::is_enabled() && any_requires_grad;

  // Forward, setup_context and _wrap_outputs run on the device of the first input
  // that is not on the CPU (a CPU scalar may ride along with CUDA tensors), as
  // dispatched ops do; kernels go to that device's current stream, which the guard
  // leaves as the caller set it. All-CPU inputs take no guard (no cost on CPU).
  // torch's THPFunction_apply sets no device here: the two differ only when the
  // caller's current device is not the inputs' (never on one GPU).
  at::OptionalDeviceGuard device_guard;
  for (const auto i : c10::irange(inputs.size())) {
    if (!inputs[i].is_cpu()) {
      device_guard.reset_device(inputs[i].device());
      break;
    }
  }

  // The ctx and its node, wired to the inputs' gradient edges.
  py::object ctx_obj;
  NativeCtx& ctx = new_ctx(ctx_obj, cls);
  auto native_node = c10::make_intrusive<NativeNode>(cls, ctx_obj.ptr(), &ctx);
  NativeNode& node = *native_node;
  // Only an executable node reaches the outputs, so only it needs a grad_fn
  // object now (for the cyclic gc; see wrap_in_grad_fn).
  const c10::intrusive_ptr<Node> node_base = is_executable
      ? wrap_in_grad_fn(std::move(native_node))
      : c10::intrusive_ptr<Node>(std::move(native_node));
  ctx.node = c10::weak_intrusive_ptr<Node>(node_base);
  ctx.needs_input_grad = py::reinterpret_steal<py::object>(needs_input_grad.release());
  node.is_variable_input = std::move(is_variable_input);
  if (is_executable) {
    torch::autograd::edge_list next_edges;
    next_edges.reserve(inputs.size());
    for (const auto i : c10::irange(inputs.size())) {
#ifdef HARNESS_SELFEVAL_FAULTS
      // "wide_grad_dropped": past the small vector's inline room of 24, no edge
      if (kBorrowed && inputs.size() > 24 && i >= 24 && seeded_fault("native_wide_grad_dropped")) {
        next_edges.emplace_back();
        continue;
      }
#endif
      next_edges.emplace_back(torch::autograd::impl::gradient_edge(inputs[i]));
    }
    node.set_next_edges(std::move(next_edges));
  }

  // Run forward (and setup_context) without grad, as torch does.
  const Names& n = names();
  THPObjectPtr setup_context_fn(PyObject_GetAttr(cls, n.setup_context));
  if (!setup_context_fn) {
    throw_python_error();
  }
  const bool overridden_setup_context =
      setup_context_fn.get() != function_base_attrs().base_setup_context;
  THPObjectPtr output;
  {
    torch::autograd::AutoGradMode grad_mode(false);
    at::AutoFwGradMode fw_grad_mode(false);
    THPObjectPtr forward_fn(PyObject_GetAttr(cls, n.forward));
    if (!forward_fn) {
      throw_python_error();
    }
    if (overridden_setup_context) {
      output = PyObject_CallObject(forward_fn.get(), args);
      if (!output) {
        throw_python_error();
      }
      PyObject* call_args[] = {ctx_obj.ptr(), args, output.get()};
      THPObjectPtr result(PyObject_Vectorcall(setup_context_fn.get(), call_args, 3, nullptr));
      if (!result) {
        throw_python_error();
      }
    } else {
      c10::SmallVector<PyObject*, 32> call_args;
      call_args.reserve(num_args + 1);
      call_args.push_back(ctx_obj.ptr());
      for (const auto i : c10::irange(num_args)) {
        call_args.push_back(PyTuple_GET_ITEM(args, i));
      }
      output = PyObject_Vectorcall(
          forward_fn.get(), call_args.data(), static_cast<size_t>(num_args + 1), nullptr);
      if (!output) {
        throw_python_error();
      }
    }
  }

#ifdef HARNESS_SELFEVAL_FAULTS
  for (auto& owner : released_owner) {
    owner.reset(); // what the handles now read: an emptied slot
  }
  if (seeded_fault("native_extra_reference") && inputs.size() > 0) {
    static auto* kept = new variable_list(); // never released: a leak per apply
    kept->push_back(inputs[0]);
  }
#endif
  return process_outputs(
      node, node_base, inputs, std::move(output), is_executable, overridden_setup_context);
}

template PyObject* apply_function<OwnedInputs>(PyObject*, PyObject*);
template PyObject* apply_function<BorrowedInputs>(PyObject*, PyObject*);

} // namespace harness_native
