# ruff: noqa  (the Functions are copied verbatim from their projects, in their own style)
"""Real custom Functions from public projects, each with its origin and licence, and samples.

Each Function is copied as its project writes it (only renamed where two projects use one name);
`torch.utils.checkpoint` is imported from the installed torch;
the Functions of torch's own test database are copied below from the installed
`torch/testing/_internal/autograd_function_py` (BSD-3-Clause; importing it needs torch's test-only
dependencies). `CORPUS` maps a name to (Function, samples, checks,
expected failures): checks=None means every check; an expected failure is a real defect of that
Function, (check, why), confirmed with plain gradcheck/gradgradcheck in test_corpus.py.
"""

from __future__ import annotations

import torch
import numpy as np
from torch.utils.checkpoint import CheckpointFunction


class MemoryEfficientSwish(torch.autograd.Function):
    """lukemelas/EfficientNet-PyTorch, efficientnet_pytorch/utils.py `SwishImplementation`
    (Apache-2.0): swish with a hand-written backward that saves only the input."""

    @staticmethod
    def forward(ctx, i):
        result = i * torch.sigmoid(i)
        ctx.save_for_backward(i)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        i = ctx.saved_tensors[0]
        sigmoid_i = torch.sigmoid(i)
        return grad_output * (sigmoid_i * (1 + i * (1 - sigmoid_i)))


class MishAuto(torch.autograd.Function):
    """thomasbrandon/mish-cuda, mish_cuda/__init__.py `MishAutoFn` (MIT): x * tanh(softplus(x))
    with its derivative written out."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        y = x.mul(torch.tanh(torch.nn.functional.softplus(x)))
        return y

    @staticmethod
    def backward(ctx, grad_output):
        x = ctx.saved_tensors[0]
        x_sigmoid = torch.sigmoid(x)
        x_tanh_sp = torch.nn.functional.softplus(x).tanh()
        return grad_output.mul(x_tanh_sp + x * x_sigmoid * (1 - x_tanh_sp * x_tanh_sp))


class ReverseLayerF(torch.autograd.Function):
    """fungtion/DANN, models/functions.py (MIT): the gradient-reversal layer of domain-adversarial
    training; the identity forward, the negated and scaled gradient backward."""

    @staticmethod
    def forward(ctx, x, alpha):
        ctx.alpha = alpha
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        output = grad_output.neg() * ctx.alpha
        return output, None


class GradMultiply(torch.autograd.Function):
    """facebookresearch/fairseq, fairseq/modules/grad_multiply.py (MIT): scales the gradient,
    the identity forward on a new tensor."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        res = x.new(x)
        return res

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale, None


class BinarizeSTE(torch.autograd.Function):
    """itayhubara/BinaryNet.pytorch-style binarization with a hard-tanh straight-through estimator
    (BSD-3-Clause): sign() forward; the gradient passes where |x| <= 1. Its gradient is by design
    not the derivative of sign(), so gradcheck and gradgradcheck rightly reject it."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sign()

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * (x.abs() <= 1).to(grad_output.dtype)


def _make_ix_like(X, dim):
    d = X.size(dim)
    rho = torch.arange(1, d + 1, device=X.device, dtype=X.dtype)
    view = [1] * X.dim()
    view[0] = -1
    return rho.view(view).transpose(0, dim)


def _roll_last(X, dim):
    if dim == -1:
        return X
    elif dim < 0:
        dim = X.dim() - dim
    perm = [i for i in range(X.dim()) if i != dim] + [dim]
    return X.permute(perm)


def _sparsemax_threshold_and_support(X, dim=-1, k=None):
    if k is None or k >= X.shape[dim]:  # do full sort
        topk, _ = torch.sort(X, dim=dim, descending=True)
    else:
        topk, _ = torch.topk(X, k=k, dim=dim)
    topk_cumsum = topk.cumsum(dim) - 1
    rhos = _make_ix_like(topk, dim)
    support = rhos * topk > topk_cumsum
    support_size = support.sum(dim=dim).unsqueeze(dim)
    tau = topk_cumsum.gather(dim, support_size - 1)
    tau /= support_size.to(X.dtype)
    return tau, support_size


class SparsemaxFunction(torch.autograd.Function):
    """deep-spin/entmax, entmax/activations.py (MIT): sparsemax, a sparse softmax; saves its
    output and recomputes the support in backward."""

    @classmethod
    def forward(cls, ctx, X, dim=-1, k=None):
        ctx.dim = dim
        max_val, _ = X.max(dim=dim, keepdim=True)
        X = X - max_val  # same numerical stability trick as softmax
        tau, supp_size = _sparsemax_threshold_and_support(X, dim=dim, k=k)
        output = torch.clamp(X - tau, min=0)
        ctx.save_for_backward(supp_size, output)
        return output

    @classmethod
    def backward(cls, ctx, grad_output):
        supp_size, output = ctx.saved_tensors
        dim = ctx.dim
        grad_input = grad_output.clone()
        grad_input[output == 0] = 0
        v_hat = grad_input.sum(dim=dim) / supp_size.to(output.dtype).squeeze(dim)
        v_hat = v_hat.unsqueeze(dim)
        grad_input = torch.where(output != 0, grad_input - v_hat, grad_input)
        return grad_input, None, None


class InplaceReLU(torch.autograd.Function):
    """The in-place activation pattern of mapillary/inplace_abn (BSD-3-Clause): modifies its input,
    declares it with mark_dirty and saves the result instead of the input."""

    @staticmethod
    def forward(ctx, x):
        x.clamp_(min=0)
        ctx.mark_dirty(x)
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * (y > 0).to(grad_output.dtype)


# --- torch/testing/_internal/autograd_function_py (PyTorch, BSD-3-Clause), torch 2.13.0, verbatim ---


def to_numpy(tensor):
    return tensor.cpu().numpy()


class NumpyCube(torch.autograd.Function):
    @staticmethod
    def forward(input):
        input_np = to_numpy(input)
        dinput = torch.tensor(3 * input_np ** 2, device=input.device)
        return torch.tensor(input_np ** 3, device=input.device), dinput

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0], output[1])
        ctx.save_for_forward(inputs[0], output[1])

    @staticmethod
    def backward(ctx, grad_output, grad_saved):
        input, dinput = ctx.saved_tensors
        return NumpyMul.apply(grad_output, dinput) + 6 * NumpyMul.apply(grad_saved, input)

    @staticmethod
    def vmap(info, in_dims, input):
        result = NumpyCube.apply(input)
        return result, (in_dims[0], in_dims[0])

    @staticmethod
    def jvp(ctx, input_tangent):
        input, dinput = ctx.saved_tensors
        return NumpyMul.apply(input_tangent, dinput), 6 * NumpyMul.apply(input_tangent, input)


class CubeGenVmap(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x ** 3, 3 * x ** 2

    @staticmethod
    def setup_context(ctx, inputs, outputs):
        ctx.save_for_backward(inputs[0], outputs[1])
        ctx.save_for_forward(inputs[0], outputs[1])

    @staticmethod
    def backward(ctx, grad_output, grad_saved):
        _input, dinput = ctx.saved_tensors
        result = grad_output * dinput + 6 * dinput
        return result

    @staticmethod
    def jvp(ctx, input_tangent):
        input, dinput = ctx.saved_tensors
        return MulGenVmap.apply(input_tangent, dinput), 6 * NumpyMul.apply(input_tangent, input)


class NumpyMul(torch.autograd.Function):
    @staticmethod
    def forward(x, y):
        return torch.tensor(to_numpy(x) * to_numpy(y), device=x.device)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)
        ctx.save_for_forward(*inputs)

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        gx = None
        if ctx.needs_input_grad[0]:
            gx = NumpyMul.apply(grad_output, y)
        gy = None
        if ctx.needs_input_grad[1]:
            gy = NumpyMul.apply(grad_output, x)
        return gx, gy

    @staticmethod
    def vmap(info, in_dims, x, y):
        x_bdim, y_bdim = in_dims
        x = x.movedim(x_bdim, -1) if x_bdim is not None else x.unsqueeze(-1)
        y = y.movedim(y_bdim, -1) if y_bdim is not None else y.unsqueeze(-1)
        result = NumpyMul.apply(x, y)
        result = result.movedim(-1, 0)
        return result, 0

    @staticmethod
    def jvp(ctx, x_tangent, y_tangent):
        x, y = ctx.saved_tensors
        return x_tangent * y + y_tangent * x


class MulGenVmap(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x, y):
        return x * y

    @staticmethod
    def setup_context(ctx, inputs, outputs):
        ctx.save_for_backward(*inputs)
        ctx.save_for_forward(*inputs)

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        gx = None
        if ctx.needs_input_grad[0]:
            gx = MulGenVmap.apply(grad_output, y)
        gy = None
        if ctx.needs_input_grad[1]:
            gy = MulGenVmap.apply(grad_output, x)
        return gx, gy

    @staticmethod
    def jvp(ctx, x_tangent, y_tangent):
        x, y = ctx.saved_tensors
        return x_tangent * y + y_tangent * x


class NumpyExp_(torch.autograd.Function):
    @staticmethod
    def forward(x):
        x_np = to_numpy(x)
        np.exp(x_np, x_np)
        return x

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        ctx.mark_dirty(x)
        ctx.save_for_backward(output)
        ctx.save_for_forward(output)

    @staticmethod
    def backward(ctx, grad_output):
        output, = ctx.saved_tensors
        return NumpyMul.apply(grad_output, output)

    @staticmethod
    def vmap(info, in_dims, x):
        NumpyExp_.apply(x)
        return x, in_dims[0]

    @staticmethod
    def jvp(ctx, x_tangent):
        # Doesn't call numpy operations because I didn't want to write NumpyMul_
        output, = ctx.saved_tensors
        x_tangent.mul_(output)
        return x_tangent


class NumpySort(torch.autograd.Function):
    @staticmethod
    def forward(x, dim):
        device = x.device
        x = to_numpy(x)
        ind = np.argsort(x, axis=dim)
        ind_inv = np.argsort(ind, axis=dim)
        return (
            torch.tensor(x, device=device),
            torch.tensor(ind, device=device),
            torch.tensor(ind_inv, device=device),
        )

    @staticmethod
    def setup_context(ctx, inputs, output):
        _x, dim = inputs
        _, ind, ind_inv = output
        ctx.mark_non_differentiable(ind, ind_inv)
        ctx.save_for_backward(ind, ind_inv)
        ctx.save_for_forward(ind, ind_inv)
        ctx.dim = dim

    @staticmethod
    def backward(ctx, grad_output, _0, _1):
        ind, ind_inv = ctx.saved_tensors
        return NumpyTake.apply(grad_output, ind_inv, ind, ctx.dim), None

    @staticmethod
    def vmap(info, in_dims, x, dim):
        x_bdim, _ = in_dims
        x = x.movedim(x_bdim, 0)
        # wrap dim
        dim = dim if dim >= 0 else dim + x.dim() - 1
        return NumpySort.apply(x, dim + 1), (0, 0, 0)

    @staticmethod
    def jvp(ctx, x_tangent, _):
        ind, ind_inv = ctx.saved_tensors
        return NumpyTake.apply(x_tangent, ind, ind_inv, ctx.dim), None, None


class NumpyTake(torch.autograd.Function):
    @staticmethod
    def forward(x, ind, ind_inv, dim):
        device = x.device
        x = to_numpy(x)
        ind = to_numpy(ind)
        return torch.tensor(np.take_along_axis(x, ind, dim), device=device)

    @staticmethod
    def setup_context(ctx, inputs, output):
        _x, ind, ind_inv, dim = inputs
        ctx.save_for_backward(ind, ind_inv)
        ctx.save_for_forward(ind, ind_inv)
        ctx.dim = dim

    @staticmethod
    def backward(ctx, grad_output):
        ind, ind_inv = ctx.saved_tensors
        result = NumpyTake.apply(grad_output, ind_inv, ind, ctx.dim)
        return result, None, None, None

    @staticmethod
    def vmap(info, in_dims, x, ind, ind_inv, dim):
        x_bdim, ind_bdim, ind_inv_bdim, _ = in_dims

        # wrap dim
        logical_dim = x.dim() if x_bdim is None else x_bdim - 1
        dim = dim if dim >= 0 else dim + logical_dim

        def expand_bdim(x, x_bdim):
            if x_bdim is None:
                return x.expand(info.batch_size, *x.shape)
            return x.movedim(x_bdim, 0)

        x = expand_bdim(x, x_bdim)
        ind = expand_bdim(ind, ind_bdim)
        ind_inv = expand_bdim(ind_inv, ind_inv_bdim)

        return NumpyTake.apply(x, ind, ind_inv, dim + 1), 0

    @staticmethod
    def jvp(ctx, x_tangent, ind_tangent, ind_inv_tangent, _):
        if ind_tangent is not None:
            raise AssertionError("Expected ind_tangent to be None")
        if ind_inv_tangent is not None:
            raise AssertionError("Expected ind_inv_tangent to be None")
        ind, ind_inv = ctx.saved_tensors
        return NumpyTake.apply(x_tangent, ind, ind_inv, ctx.dim)


class Select(torch.autograd.Function):
    @staticmethod
    def forward(x, idx):
        return x[idx]

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, idx = inputs
        ctx.x_shape = x.shape
        ctx.idx = idx

    @staticmethod
    def backward(ctx, grad_output):
        result = grad_output.new_zeros(ctx.x_shape)
        result[ctx.idx] = grad_output
        return result, None

    @staticmethod
    def vmap(info, in_dims, x, idx):
        x_bdim, _ = in_dims
        x = x.movedim(x_bdim, 1)
        return Select.apply(x, idx), 0

    @staticmethod
    def jvp(ctx, x_tangent, _):
        return Select.apply(x_tangent, ctx.idx)


class ScaleGradGenVmap(torch.autograd.Function):
    generate_vmap_rule = True
    scale = 3.14

    @staticmethod
    def forward(x):
        return x.clone()

    @staticmethod
    def setup_context(ctx, inputs, outputs):
        pass

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ScaleGradGenVmap.scale

    @staticmethod
    def jvp(ctx, x_tangent):
        return x_tangent * ScaleGradGenVmap.scale


class ZeroGradientsGenVmap(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x, y):
        return x.clone(), y.clone()

    @staticmethod
    def setup_context(ctx, inputs, outputs):
        pass

    @staticmethod
    def backward(ctx, gx, gy):
        # Intentionally returning torch.zeros instead of zeros_like or new_zeros.
        # Also intentionally not None.
        return (
            # Intentionally too-large gradient
            torch.zeros(3, 4, *gx.shape, dtype=gx.dtype, device=gx.device),
            torch.zeros(gy.shape, dtype=gy.dtype, device=gy.device),
        )

    @staticmethod
    def jvp(ctx, gx, gy):
        # Intentionally returning torch.zeros instead of zeros_like or new_zeros.
        # Also intentionally not None.
        return (
            torch.zeros(gx.shape, dtype=gx.dtype, device=gx.device),
            torch.zeros(gy.shape, dtype=gy.dtype, device=gy.device),
        )


class ForwardHasDefaultArgs(torch.autograd.Function):
    @staticmethod
    def forward(x, idx=(2,)):
        return x[idx]

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, idx = inputs
        ctx.x_shape = x.shape
        ctx.idx = idx

    @staticmethod
    def backward(ctx, grad_output):
        result = grad_output.new_zeros(ctx.x_shape)
        result[ctx.idx] = grad_output
        return result, None

    @staticmethod
    def vmap(info, in_dims, x, idx):
        x_bdim, _ = in_dims
        x = x.movedim(x_bdim, 1)
        return ForwardHasDefaultArgs.apply(x, idx), 0

    @staticmethod
    def jvp(ctx, x_tangent, _):
        return ForwardHasDefaultArgs.apply(x_tangent, ctx.idx)


# --- samples -----------------------------------------------------------------------------


def _mlp_block(x):
    return torch.tanh(x * 1.5) * x


def _x(*shape, low=-2.0, high=2.0, seed=0, requires_grad=True):
    gen = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=gen) * (high - low) + low).requires_grad_(requires_grad)


def swish_samples():
    """For the command line: `--samples corpus:swish_samples`."""
    return [(_x(3, 4),)]


def cube_samples():
    return [(_x(3, low=0.8, high=2),)]


def _sparsemax_samples():
    # distinct values well apart: the support does not change under finite differences
    return [(torch.tensor([[0.9, 0.1, -0.4, 0.6], [-1.0, 0.5, 0.45, 2.0]], requires_grad=True), -1)]


ALL = None
#: name -> (Function, samples, checks (None: every one), expected failures {(check, path): why})
CORPUS = {
    "MemoryEfficientSwish": (MemoryEfficientSwish, swish_samples, ALL, {}),
    "MishAuto": (MishAuto, lambda: [(_x(5),)], ALL, {}),
    "ReverseLayerF": (ReverseLayerF, lambda: [(_x(2, 3), 1.0)],
                      ["outputs", "gradients", "double_backward", "mark_dirty", "lifetimes"], {}),
    "GradMultiply": (GradMultiply, lambda: [(_x(2, 3), 0.5)],
                     ["outputs", "gradients", "double_backward", "mark_dirty", "lifetimes"], {}),
    "BinarizeSTE": (BinarizeSTE, lambda: [(_x(6),)], ["outputs", "gradients", "mark_dirty", "lifetimes"], {}),
    "SparsemaxFunction": (SparsemaxFunction, _sparsemax_samples, ALL, {}),
    "InplaceReLU": (InplaceReLU, lambda: [(torch.tensor([0.5, -1.0, 2.0, -0.25], requires_grad=True),)], ALL,
                    {("gradients", "dynamo:aot_eager"): "torch bug (not the Function's): "
                     "known torch issue dynamo-aot-dirty-graph-input-skips-backward"}),
    "CheckpointFunction": (CheckpointFunction, lambda: [(_mlp_block, True, _x(3))], ALL, {}),
    "NumpyCube": (NumpyCube, lambda: [(_x(3, low=0.8, high=2),)], ALL, {}),
    "NumpyMul": (NumpyMul, lambda: [(_x(4, low=0.9, high=2), _x(3, 4, low=0.9, high=2, seed=1))], ALL, {}),
    "MulGenVmap": (MulGenVmap, lambda: [(_x(4, low=0.9, high=2), _x(3, 4, low=0.9, high=2, seed=1))], ALL, {}),
    "CubeGenVmap": (CubeGenVmap, cube_samples, ALL,
                    {("gradcheck", "eager float64"): "its backward ignores the gradient of its second output "
                     "(6 * dinput where 6 * grad_saved * input is meant)",
                     ("double_backward", "eager float64"): "the same wrong backward, differentiated"}),
    "NumpyExp_": (NumpyExp_, lambda: [(_x(3, low=-1, high=1),)], ALL, {}),
    "NumpySort": (NumpySort, lambda: [(_x(3, 5), 1)], ALL,
                  {("gradcheck", "eager float64"): "its forward returns the input unsorted (torch.tensor(x) of the "
                   "unsorted array) while backward and jvp permute as for a sorted output",
                   ("jvp", "eager float64"): "the same forward, against its jvp"}),
    "Select": (Select, lambda: [(_x(3, 5), 0)], ALL, {}),
    # a gradient-scaling Function: its gradient is by design not the derivative of the identity
    "ScaleGradGenVmap": (ScaleGradGenVmap, lambda: [(_x(3, 5),)],
                         ["outputs", "gradients", "vmap", "double_backward", "mark_dirty", "lifetimes"], {}),
    "ZeroGradientsGenVmap": (ZeroGradientsGenVmap, lambda: [(_x(3, 5), _x(3, 5, seed=1))], ALL,
                             {("gradcheck", "eager float64"): "its backward returns zeros (torch's test of zero gradients)",
                              ("jvp", "eager float64"): "its jvp returns zeros (torch's test of zero tangents)"}),
    "ForwardHasDefaultArgs": (ForwardHasDefaultArgs, lambda: [(_x(3, 5),)], ALL, {}),
}
