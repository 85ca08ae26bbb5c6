// The templated apply core: torch.autograd.Function.apply re-implemented in
// C++ (after THPFunction_apply / process_outputs in torch's
// torch/csrc/autograd/python_function.cpp), parameterised on how the tensor
// inputs are held while the Function runs.
#pragma once

#include "common.h"

#include <c10/util/SmallVector.h>

#include <type_traits>
#include <unordered_set>
#include <utility>

namespace harness_native {

// ---------------------------------------------------------------------------
// Which torch::autograd::_wrap_outputs overloads do the installed headers have?
//   torch 2.13: (const variable_list&, ..., bool pure_view)
//   torch 2.14: both (const variable_list&, ...) and
//               (at::ArrayRef<const Variable*>, ...), each with a trailing
//               `c10::intrusive_ptr<Node>& attached_node` out-parameter.
// Detected by SFINAE so one source builds against either.
// ---------------------------------------------------------------------------
namespace detail {
using ImplSet = std::unordered_set<at::TensorImpl*>;

// The parameters every overload takes, then `Trailing...`.
template <class... Trailing>
struct trailing_args {};

template <class Inputs, class Trailing, class = void>
struct wrap_outputs_accepts : std::false_type {};
template <class Inputs, class... Trailing>
struct wrap_outputs_accepts<
    Inputs,
    trailing_args<Trailing...>,
    std::void_t<decltype(torch::autograd::_wrap_outputs(
        std::declval<Inputs>(),
        std::declval<const ImplSet&>(),
        std::declval<const ImplSet&>(),
        std::declval<at::ArrayRef<std::optional<Variable>>>(),
        std::declval<const c10::intrusive_ptr<Node>&>(),
        std::declval<const torch::autograd::_jvp_fn_t&>(),
        std::declval<const ImplSet&>(),
        std::declval<const torch::autograd::_view_as_self_fn_t&>(),
        std::declval<bool>(),
        std::declval<Trailing>()...))>> : std::true_type {};

template <class Inputs>
using wrap_outputs_with_attached_node =
    wrap_outputs_accepts<Inputs, trailing_args<c10::intrusive_ptr<Node>&>>;
template <class Inputs>
using wrap_outputs_without_attached_node = wrap_outputs_accepts<Inputs, trailing_args<>>;

using BorrowedRef = at::ArrayRef<const Variable*>;
} // namespace detail

// True where _wrap_outputs reports the node it attached (torch 2.14+, which
// also has node creation hooks to fire once the node is complete).
inline constexpr bool kWrapOutputsReportsAttachedNode =
    detail::wrap_outputs_with_attached_node<const variable_list&>::value;
// True where the borrowed design can hand its pointers to _wrap_outputs
// without materializing an owned variable_list (torch 2.14+).
inline constexpr bool kWrapOutputsTakesArrayRef =
    detail::wrap_outputs_with_attached_node<detail::BorrowedRef>::value ||
    detail::wrap_outputs_without_attached_node<detail::BorrowedRef>::value;

// ---------------------------------------------------------------------------
// Input holders. Both are filled from the argument tuple, which keeps every
// tensor alive for the whole apply.
// ---------------------------------------------------------------------------

// Before PyTorch's July 2026 change: an owned variable_list (one TensorImpl
// refcount bump, and drop, per tensor input).
struct OwnedInputs {
  static constexpr const char* kName = "owned";
  variable_list vars;

  void reserve(size_t n) {
    vars.reserve(n);
  }
  void push(const Variable& var) {
    vars.push_back(var);
  }
  size_t size() const {
    return vars.size();
  }
  const Variable& operator[](size_t i) const {
    return vars[i];
  }
  const variable_list& for_wrap_outputs() const {
    return vars;
  }
};

// After the change: borrowed handles into the argument tuple's tensors, in a
// small vector with inline room for 24. An owned list is built only where
// ownership is required (_wrap_outputs on torch < 2.14; libtorch builds one for
// the user's jvp callback).
struct BorrowedInputs {
  static constexpr const char* kName = "borrowed";
  c10::SmallVector<const Variable*, 24> vars;

  void reserve(size_t n) {
    vars.reserve(n);
  }
  void push(const Variable& var) {
    vars.push_back(&var);
  }
  size_t size() const {
    return vars.size();
  }
  const Variable& operator[](size_t i) const {
    return *vars[i];
  }
  variable_list materialize() const {
    variable_list owned;
    owned.reserve(vars.size());
    for (const Variable* var : vars) {
      owned.push_back(*var);
    }
    return owned;
  }
  decltype(auto) for_wrap_outputs() const {
    if constexpr (kWrapOutputsTakesArrayRef) {
      return detail::BorrowedRef(vars.data(), vars.size());
    } else {
      return materialize();
    }
  }
};

// Applies `cls` (a torch.autograd.Function subclass) to the tuple `args` the way
// torch's Function.apply does; returns a new reference. Throws UnsupportedError,
// c10::Error or python_error.
template <class Inputs>
PyObject* apply_function(PyObject* cls, PyObject* args);

extern template PyObject* apply_function<OwnedInputs>(PyObject*, PyObject*);
extern template PyObject* apply_function<BorrowedInputs>(PyObject*, PyObject*);

} // namespace harness_native
