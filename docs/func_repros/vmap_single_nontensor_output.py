import torch
from torch.func import vmap

class Scale(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return 2  # a non-tensor output (eager accepts it)

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        return None

class Pair(Scale):
    @staticmethod
    def forward(x):
        return x * 2, 2

x = torch.randn(3)
print("eager:", Scale.apply(x))
print("vmap tuple with an int:", vmap(lambda x: Pair.apply(x)[0])(torch.randn(2, 3)).shape)
print("vmap:", vmap(lambda x: (x, Scale.apply(x))[0])(torch.randn(2, 3)))
