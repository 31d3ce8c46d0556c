"""The clip-batch shape argument shared by models/, tests/python/ and bench/ scripts.

    parse_shape("2x3x8x112x112") -> [2, 3, 8, 112, 112]   (N, C, T, H, W)
"""

import argparse


class ShapeError(argparse.ArgumentTypeError, ValueError):
    """A malformed shape: argparse prints its message; other callers can catch ValueError."""


def parse_shape(text):
    """'NxCxTxHxW' -> [N, C, T, H, W], five positive integers; ShapeError otherwise."""
    try:
        dims = [int(p) for p in text.lower().split("x")]
    except ValueError:
        dims = []
    if len(dims) != 5 or any(d <= 0 for d in dims):
        raise ShapeError(f"{text!r}: expected N x C x T x H x W, five positive integers "
                                         "like 2x3x8x112x112")
    return dims
