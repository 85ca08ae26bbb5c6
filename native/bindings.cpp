// Python bindings: the two apply entry points, the ctx class, the probes and
// the build record. The public facade is harness/native.py.
#include "apply.h"
#include "node.h"

#include <torch/headeronly/version.h>

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
      .def("mark_shared_storage", [](NativeCtx&, py::args) {})
      .def_property_readonly("saved_tensors", &NativeCtx::saved_tensors);
  def_record_property(cls, "needs_input_grad", &NativeCtx::needs_input_grad);
  cls.def_readwrite("materialize_grads", &NativeCtx::materialize_grads)
      .def_readwrite("_materialize_non_diff_grads", &NativeCtx::materialize_non_diff_grads);
  def_record_property(cls, "to_save", &NativeCtx::to_save);
  def_record_property(cls, "non_differentiable", &NativeCtx::non_differentiable);
  def_record_property(cls, "dirty_tensors", &NativeCtx::dirty_tensors);
  def_record_property(cls, "saved_for_forward", &NativeCtx::saved_for_forward);
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
