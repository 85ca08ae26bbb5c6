// Python bindings: the two apply entry points, the ctx class, the probes and
// the build record. The public facade is harness/native.py.
#include "apply.h"
#include "node.h"

#include <torch/csrc/autograd/graph_task.h>
#include <torch/csrc/autograd/python_cpp_function.h>
#include <torch/headeronly/version.h>

#include <c10/util/irange.h>

#ifndef HARNESS_TORCH_VERSION_CHARS
#error "the build must define HARNESS_TORCH_VERSION_CHARS (torch.__version__ as char codes)"
#endif

namespace harness_native {

#ifdef HARNESS_SELFEVAL_FAULTS
namespace {
std::string active_seeded_fault; // set under the GIL, read under it
} // namespace

bool seeded_fault(const char* name) {
  return active_seeded_fault == name;
}
#endif

namespace {

// torch.__version__ of the interpreter that built this module.
constexpr char kBuiltForTorchVersion[] = {HARNESS_TORCH_VERSION_CHARS, '\0'};

template <class Inputs>
PyObject* apply_entry(PyObject* /*module*/, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  if (nargs != 2) {
    PyErr_Format(
        PyExc_TypeError,
        "apply_%s(function_cls, args) takes 2 arguments (%zd given)",
        Inputs::kName,
        nargs);
    return nullptr;
  }
  try {
    return apply_function<Inputs>(args[0], args[1]);
  } catch (const UnsupportedError& e) {
    set_unsupported_error(e.what());
    return nullptr;
  }
  END_HANDLE_TH_ERRORS
}

PyMethodDef apply_defs[] = {
    {"apply_owned",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(apply_entry<OwnedInputs>)),
     METH_FASTCALL,
     "apply_owned(function_cls, args): Function.apply with inputs held in an owned variable_list."},
    {"apply_borrowed",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(apply_entry<BorrowedInputs>)),
     METH_FASTCALL,
     "apply_borrowed(function_cls, args): Function.apply with borrowed input handles."},
};

const at::Tensor& unpack_tensor(py::handle obj, const char* probe) {
  TORCH_CHECK_TYPE(
      THPVariable_Check(obj.ptr()), probe, " expects a Tensor, got ", Py_TYPE(obj.ptr())->tp_name);
  // A reference into the THPVariable: reading through it adds no count.
  return THPVariable_Unpack(obj.ptr());
}

py::object tuple_or_none(const py::object& obj) {
  return obj ? obj : py::none();
}

// A read-write property over a ctx record: reads None while unset.
template <class Class>
void def_record_property(Class& cls, const char* name, py::object NativeCtx::*record) {
  cls.def_property(
      name,
      [record](const NativeCtx& self) { return tuple_or_none(self.*record); },
      [record](NativeCtx& self, py::object value) { self.*record = std::move(value); });
}

// The Python object of the ctx's autograd node: its grad_fn, the object torch's
// own ctx is. `attr` names what was asked for, for the error.
py::object node_object(const NativeCtx& self, const char* attr) {
  c10::intrusive_ptr<Node> node = self.node.lock();
  TORCH_CHECK(
      node,
      "ctx.",
      attr,
      " reads the Function's autograd node, which no longer exists (nothing holds the "
      "Function's outputs or graph any more)");
  PyObject* obj = torch::autograd::functionToPyObject(node);
  if (!obj) {
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(obj);
}

// What torch's ctx reads from its node (torch's ctx is the node's Python object):
// read from the native node's grad_fn object, which offers the same names.
const char* const kNodeProperties[] = {"next_functions", "metadata", "_input_metadata"};
const char* const kNodeMethods[] = {
    "name", "register_hook", "register_prehook", "_register_hook_dict", "_sequence_nr",
    "_set_sequence_nr"};

// Python-level members of torch's BackwardCFunction and _HookMixin that work on
// any ctx offering _forward_cls (they call the Function's own backward/jvp with
// the ctx): the native ctx takes torch's own functions.
const char* const kBorrowedFromTorch[] = {
    "apply", "apply_boxed", "apply_jvp", "_get_user_fn", "_compiled_autograd_key", "_register_hook"};

// torch's ctx members the native ctx does not offer, and why. Reading or writing
// one raises Unsupported naming it (a Function using it is not run on a guess).
const std::pair<const char*, const char*> kNotOffered[] = {
    {"_compiled_autograd_backward_state",
     "compiled autograd's state for the backward, and the native path does not run under "
     "compiled autograd"},
    {"_get_compiled_autograd_symints",
     "compiled autograd's record of the node's symbolic sizes, and the native path does not run "
     "under compiled autograd"},
};

std::string not_offered_reason(const std::string& name, const char* why) {
  return "ctx." + name + " is not offered by the native ctx: it is " + why;
}

bool is_torch_ctx_attribute(const py::str& name) {
  // Set on each Function's backward class (FunctionMeta), the rest by BackwardCFunction.
  static const py::object backward_cfunction =
      py::module_::import("torch.autograd.function").attr("BackwardCFunction");
  const std::string text = name;
  return text == "_forward_cls" || text == "_autograd_function_id" ||
      py::hasattr(backward_cfunction, name);
}

void bind_ctx(py::module_& m) {
  py::class_<NativeCtx> cls(
      m, "NativeCtx", py::dynamic_attr(), "The ctx the native path hands to a Function.");
  cls
      .def("save_for_backward", [](NativeCtx& self, py::args tensors) { self.to_save = tensors; })
      .def(
          "save_for_forward",
          [](NativeCtx& self, py::args tensors) {
            for (const auto& t : tensors) {
              if (!(THPVariable_Check(t.ptr()) || t.is_none())) {
                PyErr_SetString(
                    PyExc_AssertionError,
                    "save_for_forward expects all arguments to be tensors; you should "
                    "save non-tensors as attributes on ctx.");
                throw py::error_already_set();
              }
            }
            self.saved_for_forward = tensors;
          })
      .def("mark_dirty", [](NativeCtx& self, py::args tensors) { self.dirty_tensors = tensors; })
      .def(
          "mark_non_differentiable",
          [](NativeCtx& self, py::args tensors) { self.non_differentiable = tensors; })
      .def(
          "set_materialize_grads",
          [](NativeCtx& self, py::handle value) {
            TORCH_CHECK_TYPE(
                PyBool_Check(value.ptr()),
                "set_materialize_grads() expects a bool, got ",
                Py_TYPE(value.ptr())->tp_name);
            self.materialize_grads = value.ptr() == Py_True;
          })
      .def(
          "set_output_grad_dtype",
          [](NativeCtx&, py::args) { throw UnsupportedError("set_output_grad_dtype"); })
      .def(
          "mark_shared_storage",
          [](NativeCtx&, py::args) {
            // torch's FunctionCtx.mark_shared_storage: deprecated, does nothing
            if (PyErr_WarnEx(
                    PyExc_FutureWarning,
                    "`mark_shared_storage` is deprecated. Tensors with shared storages are "
                    "automatically tracked. Note that calls to `set_()` are not tracked",
                    1) != 0) {
              throw py::error_already_set();
            }
          })
      .def(
          "maybe_clear_saved_tensors",
          [](NativeCtx& self) {
            // torch's THPFunction_maybe_clear_saved_tensors: free them now unless
            // the running backward retains the graph
            c10::intrusive_ptr<Node> node = self.node.lock();
            if (node && !torch::autograd::get_current_graph_task_keep_graph()) {
              node->release_variables();
            }
          })
      .def_property_readonly("saved_tensors", &NativeCtx::saved_tensors)
      .def_property_readonly(
          "saved_variables",
          [](const NativeCtx& self) {
            // Deprecated in torch, still served, with torch's warning
            if (PyErr_WarnEx(
                    PyExc_DeprecationWarning,
                    "'saved_variables' is deprecated; use 'saved_tensors'",
                    0) != 0) {
              throw py::error_already_set();
            }
            return self.unpack_saved();
          })
      .def_property_readonly(
          "_raw_saved_tensors",
          [](const NativeCtx& self) {
            // torch's THPFunction_raw_saved_tensors: the SavedVariables themselves
            // (torch._C._autograd.SavedTensor), borrowed from the node
            c10::intrusive_ptr<Node> node = self.node.lock();
            auto* native = static_cast<NativeNode*>(node.get());
            TORCH_CHECK(native && !native->has_freed_buffers, torch::autograd::ERR_BACKWARD_TWICE);
            py::tuple result(native->saved_variables.size());
            for (const auto i : c10::irange(native->saved_variables.size())) {
              result[i] = py::cast(native->saved_variables[i], py::return_value_policy::reference);
            }
            return result;
          })
      .def_property_readonly("requires_grad", [](const NativeCtx&) { return true; })
      .def_property_readonly(
          "_forward_cls", [](const NativeCtx& self) { return self.forward_cls; })
      .def_property_readonly(
          "_autograd_function_id",
          [](const NativeCtx& self) {
            return self.forward_cls.attr("_backward_cls").attr("_autograd_function_id");
          });
  def_record_property(cls, "needs_input_grad", &NativeCtx::needs_input_grad);
  cls.def_readwrite("materialize_grads", &NativeCtx::materialize_grads)
      .def_readwrite("_materialize_non_diff_grads", &NativeCtx::materialize_non_diff_grads)
      .def_property(
          "_is_pure_view",
          [](const NativeCtx& self) { return self.pure_view; },
          [](NativeCtx& self, py::handle value) {
            TORCH_CHECK_TYPE(
                PyBool_Check(value.ptr()),
                "set_pure_view() expects a bool, got ",
                Py_TYPE(value.ptr())->tp_name);
            self.pure_view = value.ptr() == Py_True;
          });
  def_record_property(cls, "to_save", &NativeCtx::to_save);
  def_record_property(cls, "non_differentiable", &NativeCtx::non_differentiable);
  def_record_property(cls, "dirty_tensors", &NativeCtx::dirty_tensors);
  def_record_property(cls, "saved_for_forward", &NativeCtx::saved_for_forward);

  for (const char* name : kNodeProperties) {
    cls.def_property_readonly(name, [name](const NativeCtx& self) {
      return node_object(self, name).attr(name);
    });
  }
  for (const char* name : kNodeMethods) {
    cls.def(name, [name](const NativeCtx& self, py::args args, py::kwargs kwargs) {
      return node_object(self, name).attr(name)(*args, **kwargs);
    });
  }

  py::module_ function_module = py::module_::import("torch.autograd.function");
  py::object backward_cfunction = function_module.attr("BackwardCFunction");
  py::object hook_mixin = function_module.attr("_HookMixin");
  for (const char* name : kBorrowedFromTorch) {
    py::object owner = hook_mixin.attr("__dict__").contains(name) ? hook_mixin : backward_cfunction;
    cls.attr(name) = owner.attr("__dict__")[name];
  }

  py::dict not_offered;
  for (const auto& [name, why] : kNotOffered) {
    const std::string reason = not_offered_reason(name, why);
    not_offered[name] = reason;
    cls.def_property(
        name,
        [reason](const NativeCtx&) -> py::object { throw UnsupportedError(reason); },
        [reason](NativeCtx&, py::handle) { throw UnsupportedError(reason); });
  }
  m.attr("CTX_NOT_OFFERED") = not_offered;

  // Anything else torch's ctx has (a member added by a later torch) is refused by
  // name; a name torch's ctx lacks too is the AttributeError Python raises.
  cls.def("__getattr__", [](py::handle self, py::str name) -> py::object {
    if (is_torch_ctx_attribute(name)) {
      throw UnsupportedError(not_offered_reason(
          name, "a member of torch's ctx that the native ctx does not know"));
    }
    PyErr_Format(
        PyExc_AttributeError,
        "'%s' object has no attribute '%U'",
        Py_TYPE(self.ptr())->tp_name,
        name.ptr());
    throw py::error_already_set();
  });
}

} // namespace
} // namespace harness_native

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  using namespace harness_native;
  m.doc() = "Native autograd.Function apply (owned/borrowed input holders); see harness.native.";

  py::register_local_exception_translator([](std::exception_ptr p) {
    try {
      if (p) {
        std::rethrow_exception(p);
      }
    } catch (const UnsupportedError& e) {
      set_unsupported_error(e.what());
    } catch (python_error& e) {
      e.restore();
    } catch (const c10::Error&) {
      torch::translate_exception_to_python(std::current_exception());
    }
  });

  bind_ctx(m);
  init_grad_fn_type();

  for (auto& def : apply_defs) {
    PyObject* fn = PyCFunction_NewEx(&def, nullptr, m.ptr());
    if (!fn) {
      throw py::error_already_set();
    }
    m.add_object(def.ml_name, py::reinterpret_steal<py::object>(fn));
  }

  m.def(
      "_register_unsupported_type",
      [](py::handle type) { register_unsupported_type(type.ptr()); },
      "Sets the Python exception class raised for what the native path cannot run.");

  m.def(
      "weak_use_count",
      [](py::handle t) {
        return unpack_tensor(t, "weak_use_count").weak_use_count();
      },
      "TensorImpl weak count as c10::intrusive_ptr defines it: weak references + 1 while any "
      "strong reference exists (a fresh tensor reads 1).");
  m.def(
      "node_use_count",
      [](py::handle t) -> size_t {
        const auto& grad_fn = unpack_tensor(t, "node_use_count").grad_fn();
        return grad_fn ? grad_fn.use_count() : 0;
      },
      "Strong refcount of the tensor's grad_fn Node (0 if it has none).");

#ifdef HARNESS_SELFEVAL_FAULTS
  m.def(
      "_set_seeded_fault",
      [](std::string name) { active_seeded_fault = std::move(name); },
      "Test-only build: activate one seeded fault by name ('' for none).");
#endif

  m.attr("TORCH_VERSION") = kBuiltForTorchVersion;
  m.attr("TORCH_HEADERS_VERSION") = std::to_string(TORCH_VERSION_MAJOR) + "." +
      std::to_string(TORCH_VERSION_MINOR) + "." + std::to_string(TORCH_VERSION_PATCH);
  m.attr("BORROWED_USES_ARRAYREF") = kWrapOutputsTakesArrayRef;
  m.attr("WRAP_OUTPUTS_REPORTS_ATTACHED_NODE") = kWrapOutputsReportsAttachedNode;
}
