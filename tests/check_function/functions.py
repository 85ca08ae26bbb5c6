"""Custom Functions written the way public projects write them, and broken variants of them.

Each correct Function follows a well-known public pattern (cited beside it); each broken
variant makes one mistake that projects really make, and check_function must name the check
that catches it.
"""

from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

# --- correct Functions ----------------------------------------------------------------------


class LinearFunction(torch.autograd.Function):
    """Saved tensors: the `LinearFunction` of PyTorch's "Extending PyTorch" notes (old style,
    an optional bias, needs_input_grad)."""

    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight, bias)
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


class InplaceLeakyReLU(torch.autograd.Function):
    """mark_dirty: an in-place activation that saves its output instead of its input, as
    in-place ABN (mapillary/inplace_abn) does to save memory; a float slope argument."""

    @staticmethod
    def forward(ctx, x, slope):
        x.mul_(torch.where(x >= 0, 1.0, slope))
        ctx.mark_dirty(x)
        ctx.slope = slope
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * torch.where(y >= 0, 1.0, ctx.slope), None


class ReLUWithMask(torch.autograd.Function):
    """Non-differentiable outputs: an activation that also returns its mask (as dropout and
    max-pool kernels return masks and indices), marked non-differentiable."""

    @staticmethod
    def forward(ctx, x):
        mask = (x > 0).to(x.dtype)
        ctx.mark_non_differentiable(mask)
        ctx.save_for_backward(mask)
        return x * mask, mask

    @staticmethod
    def backward(ctx, grad_output, grad_mask):
        (mask,) = ctx.saved_tensors
        return grad_output * mask


class RoundSTE(torch.autograd.Function):
    """A straight-through estimator (Bengio et al. 2013; quantization-aware training): round
    in the forward, pass the gradient straight through. Its gradient is deliberately not the
    derivative, so gradcheck does not apply to it."""

    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class Exp(torch.autograd.Function):
    """A user jvp: the forward-mode AD example of PyTorch's "Extending PyTorch" notes."""

    @staticmethod
    def forward(ctx, x):
        result = x.exp()
        ctx.save_for_backward(result)
        ctx.save_for_forward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * result

    @staticmethod
    def jvp(ctx, x_t):
        (result,) = ctx.saved_tensors
        return x_t * result


class Cube(torch.autograd.Function):
    """setup_context + vmap: `MyCube` of the torch.func "Extending torch.func with
    autograd.Function" docs, with generate_vmap_rule and a second output."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x ** 3, 3 * x ** 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x, output[1])

    @staticmethod
    def backward(ctx, grad_output, grad_dx):
        x, dx = ctx.saved_tensors
        return grad_output * dx + grad_dx * 6 * x


class ScaleRows(torch.autograd.Function):
    """setup_context + an explicit vmap staticmethod: rows scaled by a factor, with the batch
    dimension handled by hand as the torch.func docs' `NumpyTake` example does."""

    @staticmethod
    def forward(x, factor):
        return x * factor

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.factor = inputs[1]

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.factor, None

    @staticmethod
    def vmap(info, in_dims, x, factor):
        x_bdim, _ = in_dims
        x = x.movedim(x_bdim, 0) if x_bdim is not None else x.expand(info.batch_size, *x.shape)
        return ScaleRows.apply(x, factor), 0


class MaskedMean(torch.autograd.Function):
    """Tensors and non-tensors: a weighted reduction taking a tensor that does not require
    grad, an int dim, a bool keepdim and a string mode, and returning a tensor and an int."""

    @staticmethod
    def forward(ctx, x, weight, dim, keepdim, mode):
        scale = weight.sum(dim, keepdim=True) if mode == "mean" else torch.ones_like(weight.sum(dim, keepdim=True))
        ctx.save_for_backward(weight, scale)
        ctx.dim, ctx.keepdim = dim, keepdim
        return (x * weight).sum(dim, keepdim=keepdim) / (scale if keepdim else scale.squeeze(dim)), x.shape[dim]

    @staticmethod
    def backward(ctx, grad_output, grad_count):
        weight, scale = ctx.saved_tensors
        if not ctx.keepdim:
            grad_output = grad_output.unsqueeze(ctx.dim)
        return grad_output * weight / scale, None, None, None, None


class OnceDifferentiableSigmoid(torch.autograd.Function):
    """@once_differentiable: a backward that leaves autograd (here through detached math), as
    fused CUDA kernels do; double backward is then not checked."""

    @staticmethod
    def forward(ctx, x):
        y = torch.sigmoid(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * y * (1 - y)


#: every correct Function with samples to check it on, and the checks that apply to it
CORRECT = {
    "saved tensors": (LinearFunction, lambda: [
        (torch.randn(4, 3, dtype=torch.float32, requires_grad=True),
         torch.randn(2, 3, requires_grad=True), torch.randn(2, requires_grad=True)),
        (torch.randn(4, 3, requires_grad=True), torch.randn(2, 3), None)]),
    "mark_dirty": (InplaceLeakyReLU, lambda: [(torch.randn(3, 4, requires_grad=True), 0.1)]),
    "non-differentiable outputs": (ReLUWithMask, lambda: [(torch.randn(5, requires_grad=True),)]),
    "straight-through estimator": (RoundSTE, lambda: [(torch.randn(6, requires_grad=True) * 3,)]),
    "jvp": (Exp, lambda: [(torch.randn(2, 3, requires_grad=True),)]),
    "setup_context + vmap": (Cube, lambda: [(torch.randn(4, requires_grad=True),)]),
    "vmap staticmethod": (ScaleRows, lambda: [(torch.randn(2, 3, requires_grad=True), 2.5)]),
    "tensors and non-tensors": (MaskedMean, lambda: [
        (torch.randn(3, 4, requires_grad=True), torch.rand(3, 4) + 0.5, 1, False, "mean"),
        (torch.randn(3, 4, requires_grad=True), torch.rand(3, 4) + 0.5, 0, True, "sum")]),
    "once_differentiable": (OnceDifferentiableSigmoid, lambda: [(torch.randn(5, requires_grad=True),)]),
}


# --- broken variants ---------------------------------------------------------------------------


class SwappedGradMul(torch.autograd.Function):
    """Elementwise product whose backward returns the two gradients in the wrong order."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx, grad_output):
        x, y = ctx.saved_tensors
        return grad_output * x, grad_output * y  # should be (grad * y, grad * x)


class InplaceLeakyReLUNoMarkDirty(InplaceLeakyReLU):
    """InplaceLeakyReLU without ctx.mark_dirty (and returning a fresh view of the input)."""

    @staticmethod
    def forward(ctx, x, slope):
        x.mul_(torch.where(x >= 0, 1.0, slope))
        ctx.slope = slope
        ctx.save_for_backward(x)
        return x.view_as(x)


_DEBUG_CACHE: list = []


class SigmoidKeepsOutputOnCtx(torch.autograd.Function):
    """Stores its output on ctx instead of save_for_backward: output -> grad_fn -> ctx ->
    output is a reference cycle, which torch's docs warn about (memory is held until gc runs)."""

    @staticmethod
    def forward(ctx, x):
        y = torch.sigmoid(x)
        ctx.y = y
        return y

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.y * (1 - ctx.y)


class SigmoidLeaksSaved(torch.autograd.Function):
    """Keeps every saved tensor in a module-level debugging cache: a leak."""

    @staticmethod
    def forward(ctx, x):
        y = torch.sigmoid(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        _DEBUG_CACHE.append(y)
        return grad_output * y * (1 - y)


class ExpWrongJvp(Exp):
    """Exp whose jvp forgets the chain rule's factor."""

    @staticmethod
    def jvp(ctx, x_t):
        return x_t


class ReLUWithMaskGradThroughMask(torch.autograd.Function):
    """ReLUWithMask that does not mark the mask non-differentiable and sends the mask's
    gradient back into the input, as if the mask were differentiable."""

    @staticmethod
    def forward(ctx, x):
        mask = (x > 0).to(x.dtype)
        ctx.save_for_backward(mask)
        return x * mask, mask

    @staticmethod
    def backward(ctx, grad_output, grad_mask):
        (mask,) = ctx.saved_tensors
        return grad_output * mask + grad_mask


#: broken variant -> (samples, the check that must reject it)
BROKEN = {
    "swapped gradients": (SwappedGradMul, lambda: [(torch.randn(4, requires_grad=True),
                                                     torch.randn(4, requires_grad=True))], "gradcheck"),
    "missing mark_dirty": (InplaceLeakyReLUNoMarkDirty, lambda: [(torch.randn(3, 4, requires_grad=True), 0.1)],
                           "mark_dirty"),
    "saved tensor kept on ctx (cycle)": (SigmoidKeepsOutputOnCtx, lambda: [(torch.randn(5, requires_grad=True),)],
                                         "lifetimes"),
    "leaked saved tensor": (SigmoidLeaksSaved, lambda: [(torch.randn(5, requires_grad=True),)], "lifetimes"),
    "wrong jvp": (ExpWrongJvp, lambda: [(torch.randn(2, 3, requires_grad=True),)], "jvp"),
    "gradient for a non-differentiable output": (ReLUWithMaskGradThroughMask,
                                                 lambda: [(torch.randn(5, requires_grad=True),)], "gradcheck"),
}
