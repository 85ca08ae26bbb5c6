// The native ctx (the FunctionCtx API seen by forward/setup_context/backward/jvp)
// and the native autograd Node that calls the Function's Python backward.
#pragma once

#include "common.h"

#include <vector>

namespace harness_native {

struct NativeNode;

// The `ctx` handed to the user's forward/setup_context/backward/jvp. A pybind11
// class with a __dict__, so Functions can store arbitrary attributes on it.
//
// Ownership: the NativeNode owns its ctx (a strong Python reference, dropped in
// release_resources); the ctx points back through a weak_intrusive_ptr, so
// there is no C++ reference cycle. The node itself is owned by its outputs and
// by its Python grad_fn object (see wrap_in_grad_fn), which reports the ctx to
// the cyclic gc. Hidden like pybind11's own types, which it holds by value.
struct __attribute__((visibility("hidden"))) NativeCtx {
  // Recorded by save_for_backward / mark_non_differentiable / mark_dirty /
  // save_for_forward during forward or setup_context; consumed (and cleared)
  // when the outputs are wrapped. Null when never set.
  py::object to_save;
  py::object non_differentiable;
  py::object dirty_tensors;
  py::object saved_for_forward;
  // Tuple of bools, one per forward argument (False for non-tensors).
  py::object needs_input_grad;
  bool materialize_grads = true;
  bool materialize_non_diff_grads = true;
  // ctx._is_pure_view: replaying the output views is enough for their backward
  // (handed to _wrap_outputs, as torch's process_outputs does).
  bool pure_view = false;
  // The Function class (torch's ctx reads it as its class attribute _forward_cls).
  py::object forward_cls;

  c10::weak_intrusive_ptr<Node> node{c10::intrusive_ptr<Node>()};

  // ctx.saved_tensors: the save_for_forward tuple while jvp runs, else the
  // unpacked SavedVariables (with torch's version-counter check).
  py::object saved_tensors() const;
  // The unpacked SavedVariables alone: ctx.saved_variables, torch's deprecated
  // alias, which (unlike saved_tensors) never reads the save_for_forward tuple.
  py::object unpack_saved() const;
};

struct __attribute__((visibility("hidden"))) NativeNode final : Node {
  // Steals nothing: increfs `cls` and `ctx_obj`.
  NativeNode(PyObject* cls, PyObject* ctx_obj, NativeCtx* ctx);
  ~NativeNode() override;

  variable_list apply(variable_list&& grads) override;
  void release_variables() override;
  void release_resources() override;
  std::string name() const override;
  void compiled_args(torch::autograd::CompiledNodeArgs& args) const override;

  PyObject* cls() const {
    return cls_;
  }
  PyObject* ctx_obj() const {
    return ctx_obj_;
  }
  NativeCtx* ctx() const {
    return ctx_;
  }

  std::vector<bool> is_variable_input;
  std::vector<VariableInfo> output_info;
  std::vector<SavedVariable> saved_variables;
  bool has_freed_buffers = false;

 private:
  void drop_python_references() noexcept;

  PyObject* cls_; // the autograd.Function subclass (strong)
  PyObject* ctx_obj_; // the Python ctx object (strong)
  NativeCtx* ctx_; // lives inside ctx_obj_
};

// Gives an executable node its Python `grad_fn` object at creation, as torch's
// THPFunction_new does for a PyNode (whose grad_fn is the ctx itself): the
// object owns the node and sits in the node's PyObject slot, so the node keeps
// it alive while anything else holds the node (c10's Note [PyObject
// preservation]). Through it the cyclic gc sees output -> node -> ctx: torch's
// THPVariable tp_traverse visits the grad_fn's PyObject, and this object's
// tp_traverse visits the ctx, so a Function that stores its output on ctx
// makes a cycle gc frees, as on eager. Returns a strong reference to the node
// for the caller (a second one; the object holds the first).
c10::intrusive_ptr<Node> wrap_in_grad_fn(c10::intrusive_ptr<NativeNode> node);

// Readies the Python type of those grad_fn objects; once, at module import.
void init_grad_fn_type();

} // namespace harness_native
