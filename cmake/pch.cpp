// Translation unit that owns the precompiled torch header (see cmake/torch_pch.h).
