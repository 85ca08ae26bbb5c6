# torch.func.jacfwd(has_aux=True) on an input with zero elements: IndexError (torch 2.13.0+cpu)
import torch
from torch.func import jacfwd, jacrev

x = torch.randn(0)
print("jacrev:", jacrev(lambda x: (x.sin(), x), has_aux=True)(x))
print("jacfwd, no aux:", jacfwd(lambda x: x.sin())(x))
print("jacfwd:", jacfwd(lambda x: (x.sin(), x), has_aux=True)(x))  # IndexError
