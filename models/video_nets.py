"""Small, faithful PyTorch re-implementations of convolutional video models, for vcc's op coverage.

    import sys; sys.path.insert(0, "<vcc>/models")
    import torch
    from video_nets import build_model

    torch.manual_seed(0)
    model = build_model("x3d_s_tiny", num_classes=10, clip=(2, 3, 4, 48, 48))
    logits = model(torch.randn(2, 3, 4, 48, 48))                    # (N, K)

    unet = build_model("unet3d_block", clip=(2, 3, 4, 16, 16))
    loss = unet(torch.randn(2, 3, 4, 16, 16), torch.randn(2, 3, 4, 16, 16))   # () scalar

Letters: N batch, C channels, T frames, H height, W width, K classes, D embedding width.
Shapes in comments are those of each model's DEFAULT_SHAPES entry (batch 2).

Each network keeps the structure, kernel shapes, strides, paddings and op forms of its paper and
shrinks only widths and depths (a few thousand to ~100k parameters), so that one training step of a
small clip takes well under a second on a CPU and every op type of the original appears in the
export:

    x3d_s_tiny    X3D (Feichtenhofer, CVPR 2020, "X3D: Expanding Architectures for Efficient Video
                  Recognition"), the X3D-S layout of pytorchvideo's create_x3d: (1,3,3) stem conv plus
                  a depthwise (5,1,1) temporal conv, bottlenecks with a depthwise 3x3x3 conv
                  (groups = channels), squeeze-excite on every other block, swish x*sigmoid(x),
                  BatchNorm3d, residual Add; head conv, GlobalAveragePool, 1x1x1 conv, Dropout, Linear.
    slowfast_tiny SlowFast (Feichtenhofer et al., ICCV 2019, "SlowFast Networks for Video
                  Recognition") on ONE input clip: the slow pathway reads every alpha=4th frame
                  (x[:, :, ::4], an ONNX Slice with step 4), the fast pathway all frames with beta=1/4
                  of the channels; time-strided Conv3d laterals (kernel (5,1,1), stride (4,1,1)) from
                  fast to slow, concatenated (Concat); BN/ReLU, MaxPool3d, residual bottlenecks, global
                  average pools of both pathways, concatenated, Dropout, Linear.
    c3d_tiny      C3D (Tran et al., ICCV 2015, "Learning Spatiotemporal Features with 3D Convolutional
                  Networks"): eight 3x3x3 Conv3d + ReLU, five MaxPool3d in Caffe's rounding
                  (ceil_mode=True; pool1 (1,2,2), pool2-5 (2,2,2), pool5 padded (0,1,1)), Flatten,
                  fc6/fc7 with ReLU and Dropout, fc8. At the default 8x40x40 ceil_mode matters
                  (pool4: H=W 5 -> 3, floor gives 2; pool5: T 1 -> 1, floor gives 0) and pool5's last
                  window in H and W would start in the right padding: PyTorch drops it (3 -> 2, as the
                  original C3D's pool5 does at 112x112: 7 -> 4), a plain ceil((L+pads-k)/s)+1 gives 3.
    unet3d_block  a video-diffusion 3-D UNet (Ho et al., 2022, "Video Diffusion Models", after the
                  DDPM UNet of Ho et al., 2020): ResBlocks of GroupNorm, SiLU, Conv3d with a sinusoidal
                  timestep embedding (Sin and Cos of a fixed timestep buffer) added per channel; two
                  levels: down by strided Conv3d, up once by ConvTranspose3d and once by
                  nn.Upsample(scale_factor=2, mode='nearest'); skip connections by torch.cat; the
                  epsilon-prediction loss in the graph: forward(x, noise) returns
                  ((pred - noise)**2).mean(), a scalar.
    s3d           torchvision.models.video.s3d (Xie et al., ECCV 2018, "Rethinking Spatiotemporal
                  Feature Learning"), unchanged: its final AvgPool3d has kernel (2, 7, 7) and stride
                  1 over features of (T, H, W) / (8, 32, 32), so it needs T >= 13 and H, W >= 209;
                  16x224x224, the clip it is made for, gives a 1x1x1 pooled map.
    s3d_small     the same torchvision S3D, every layer and weight shape unchanged, with ONE
                  difference: avgpool = AvgPool3d(kernel_size=<the feature map's (T, H, W) at the
                  given clip>, stride=1) instead of (2, 7, 7), so the pooled map is 1x1x1 as in the
                  full model at 16x224x224 (s3d_feature_thw gives that map). Default clip 8x64x64:
                  features end at (1, 2, 2), the kernel is (1, 2, 2). The pool averages over space
                  only from H, W >= 49 (at 8x48x48 or 8x32x32 the map and the kernel are 1x1x1, an
                  AveragePool that copies), and over time too from T >= 13: 16x64x64 gives
                  (2, 2, 2), the full model's form, at twice the cost. 64 halves evenly down to 2
                  as 224 does down to 7.
    vivit_tiny    a ViViT factorised encoder (Arnab et al., ICCV 2021, "ViViT: A Video Vision
                  Transformer", model 2): tubelet embedding by a Conv3d of kernel = stride (2, 8, 8), a
                  class token and learned positional embeddings, spatial transformer layers over each
                  frame group's patches, the frame tokens (each group's class token, taken by
                  indexing: Gather) through temporal transformer layers with their own class token,
                  LayerNorm and a linear head. The layers are nn.TransformerEncoderLayer (pre-norm,
                  nn.MultiheadAttention, a GELU MLP); default clip 4x32x32, width 32, 2 heads, one
                  spatial and one temporal layer.
    videomae_tiny Hugging Face transformers' VideoMAEForVideoClassification (Tong et al., NeurIPS 2022),
                  the library's own code at a tiny config: tubelets (2, 8, 8) by a Conv3d, the fixed
                  sinusoid position table (a constant of the graph, not a parameter), 2 layers of width
                  64 with 4 heads and an exact-GELU MLP of 128, mean pooling with fc_norm, a linear
                  classifier; default clip 4x32x32.
    timesformer_tiny  Hugging Face transformers' TimesformerForVideoClassification (Bertasius et al.,
                  ICML 2021), divided space-time attention, the same tiny sizes (patch 8, 2 layers, width
                  64, 4 heads), drop_path 0; default clip 4x32x32.
                  Both take pixel_values (N, T, C, H, W): HFVideoClassifier permutes vcc's (N, C, T, H,
                  W) clip to it inside the model, so the export reads the usual clip. They need the
                  `transformers` package (python/requirements.txt pins it).
    mvit_v1_b     torchvision.models.video.mvit_v1_b (Fan et al., ICCV 2021, "Multiscale Vision
                  Transformers"), unchanged but for stochastic depth 0 (its row-mode drop path draws
                  with torch.bernoulli, which has no ONNX form); 16 blocks, pooling attention, absolute
                  space-time position embeddings; made for 16x224x224 (its embeddings are sized for it).
    mvit_v2_s     torchvision.models.video.mvit_v2_s (Li et al., CVPR 2022, "MViTv2"), likewise with
                  stochastic depth 0: relative position terms (Einsum and an in-place slice-add that
                  exports as ScatterND), residual pooling, projection after attention; 16x224x224.
    mvit_v1_tiny  torchvision's own MViT class (the modules of mvit_v1_b, unchanged) at 4 blocks: widths
    mvit_v2_tiny  16-64, 1-4 heads, query pooling at the two stage changes and key/value pooling by
                  (1, 4, 4) then (1, 2, 2) as in the full models, sized for a 4x32x32 clip (tokens
                  (2, 8, 8) after the (2, 4, 4)-strided patch embedding); v2_tiny with mvit_v2_s's
                  relative positions, residual pooling and projection after attention. Both export
                  the Loop/If/Sequence forms of the full models.

build_model(name, num_classes, clip, dropout) builds any of them; MODELS lists the names,
DEFAULT_SHAPES the (N, C, T, H, W) each is meant for, CLASSIFIER_KEYS the state_dict key whose
first dim is K (None for the UNet, which has no classes). Dropout defaults to each paper's rate
(DEFAULT_DROPOUT); pass dropout=0.0 for a deterministic forward (the Dropout nodes stay in the
export, with ratio 0).

All forward passes are traceable by torch.onnx.export with static shapes: no Python branches on
tensor values, torch.flatten instead of x.view(x.size(0), -1).
"""

import math

import torch
import torch.nn as nn

__all__ = ["MODELS", "DEFAULT_SHAPES", "DEFAULT_DROPOUT", "CLASSIFIER_KEYS", "build_model", "X3DTiny",
           "SlowFastTiny", "C3DTiny", "UNet3DBlock", "ViViTTiny", "HFVideoClassifier", "s3d_feature_thw",
           "s3d_small", "mvit", "count_parameters"]

MODELS = ("x3d_s_tiny", "slowfast_tiny", "c3d_tiny", "unet3d_block", "s3d", "s3d_small", "vivit_tiny",
          "videomae_tiny", "timesformer_tiny", "mvit_v1_tiny", "mvit_v2_tiny", "mvit_v1_b", "mvit_v2_s")

# (N, C, T, H, W) each model is sized for (batch 2, few frames, small H/W; s3d needs 16x224x224)
DEFAULT_SHAPES = {
    "x3d_s_tiny": (2, 3, 4, 48, 48),
    "slowfast_tiny": (2, 3, 8, 32, 32),
    "c3d_tiny": (2, 3, 8, 40, 40),
    "unet3d_block": (2, 3, 4, 16, 16),
    "s3d": (2, 3, 16, 224, 224),
    "s3d_small": (2, 3, 8, 64, 64),
    "vivit_tiny": (2, 3, 4, 32, 32),
    "videomae_tiny": (2, 3, 4, 32, 32),
    "timesformer_tiny": (2, 3, 4, 32, 32),
    "mvit_v1_tiny": (2, 3, 4, 32, 32),
    "mvit_v2_tiny": (2, 3, 4, 32, 32),
    "mvit_v1_b": (1, 3, 16, 224, 224),
    "mvit_v2_s": (1, 3, 16, 224, 224),
}

# the papers' dropout rates (X3D 0.5, SlowFast 0.5, C3D 0.5 after fc6 and fc7, torchvision S3D 0.2)
DEFAULT_DROPOUT = {"x3d_s_tiny": 0.5, "slowfast_tiny": 0.5, "c3d_tiny": 0.5, "unet3d_block": None,
                   "s3d": 0.2, "s3d_small": 0.2, "vivit_tiny": 0.1, "videomae_tiny": 0.1, "timesformer_tiny": 0.1,
                   "mvit_v1_tiny": 0.5, "mvit_v2_tiny": 0.5, "mvit_v1_b": 0.5, "mvit_v2_s": 0.5}

# state_dict key of the last layer's weight, whose dim 0 is K
CLASSIFIER_KEYS = {"x3d_s_tiny": "proj.weight", "slowfast_tiny": "fc.weight", "c3d_tiny": "fc8.weight",
                   "unet3d_block": None, "s3d": "classifier.1.weight", "s3d_small": "classifier.1.weight",
                   "vivit_tiny": "head.weight", "videomae_tiny": "hf.classifier.weight",
                   "timesformer_tiny": "hf.classifier.weight", "mvit_v1_tiny": "head.1.weight",
                   "mvit_v2_tiny": "head.1.weight", "mvit_v1_b": "head.1.weight", "mvit_v2_s": "head.1.weight"}


def count_parameters(model):
    return int(sum(p.numel() for p in model.parameters()))


# ---------------------------------------------------------------------------------------------------
# X3D (Feichtenhofer 2020), X3D-S layout at tiny widths


class Swish(nn.Module):
    """x * sigmoid(x) (X3D's swish; exported as Sigmoid -> Mul)."""

    def forward(self, x):
        return x * torch.sigmoid(x)


class SqueezeExcite(nn.Module):
    """Hu et al. 2018 squeeze-excitation as in X3D: x * sigmoid(W2 relu(W1 avgpool(x))).

    x (N, C, T, H, W) -> AdaptiveAvgPool3d(1) (N, C, 1, 1, 1) -> 1x1x1 Conv (N, S, 1, 1, 1) -> ReLU
    -> 1x1x1 Conv (N, C, 1, 1, 1) -> Sigmoid -> Mul with x (broadcast over T, H, W)."""

    def __init__(self, channels, squeeze):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool3d(1)
        self.fc1 = nn.Conv3d(channels, squeeze, kernel_size=1, bias=True)
        self.relu = nn.ReLU()
        self.fc2 = nn.Conv3d(squeeze, channels, kernel_size=1, bias=True)
        self.gate = nn.Sigmoid()

    def forward(self, x):
        s = self.gate(self.fc2(self.relu(self.fc1(self.pool(x)))))
        return x * s


def _round_width(width, multiplier, divisor=8):
    """pytorchvideo's round_width: width * multiplier rounded to a multiple of divisor (>= divisor)."""
    width *= multiplier
    new = max(divisor, int(width + divisor / 2) // divisor * divisor)
    if new < 0.9 * width:
        new += divisor
    return int(new)


class X3DBottleneck(nn.Module):
    """X3D's residual block: 1x1x1 conv -> BN -> ReLU -> depthwise 3x3x3 conv (groups = inner,
    spatial stride s) -> BN -> [SE] -> swish -> 1x1x1 conv -> BN, plus the shortcut (identity, or a
    1x1x1 conv with stride s and BN when the shape changes) -> Add -> ReLU."""

    def __init__(self, dim_in, dim_inner, dim_out, spatial_stride, use_se):
        super().__init__()
        self.conv_a = nn.Conv3d(dim_in, dim_inner, kernel_size=1, bias=False)
        self.bn_a = nn.BatchNorm3d(dim_inner)
        self.relu_a = nn.ReLU()
        self.conv_b = nn.Conv3d(dim_inner, dim_inner, kernel_size=3, stride=(1, spatial_stride, spatial_stride),
                                padding=1, groups=dim_inner, bias=False)
        self.bn_b = nn.BatchNorm3d(dim_inner)
        self.se = SqueezeExcite(dim_inner, _round_width(dim_inner, 1 / 16)) if use_se else None
        self.swish = Swish()
        self.conv_c = nn.Conv3d(dim_inner, dim_out, kernel_size=1, bias=False)
        self.bn_c = nn.BatchNorm3d(dim_out)
        if dim_in != dim_out or spatial_stride != 1:
            self.shortcut = nn.Sequential(
                nn.Conv3d(dim_in, dim_out, kernel_size=1, stride=(1, spatial_stride, spatial_stride),
                          bias=False),
                nn.BatchNorm3d(dim_out))
        else:
            self.shortcut = None
        self.relu = nn.ReLU()

    def forward(self, x):
        h = self.relu_a(self.bn_a(self.conv_a(x)))
        h = self.bn_b(self.conv_b(h))
        if self.se is not None:
            h = self.se(h)
        h = self.bn_c(self.conv_c(self.swish(h)))
        s = x if self.shortcut is None else self.shortcut(x)
        return self.relu(s + h)


class X3DTiny(nn.Module):
    """X3D-S (Feichtenhofer 2020, Table 1 / pytorchvideo create_x3d) at tiny widths.

    Same layout as X3D-S: stem width = stage-1 width, stages of widths w with inner width
    2.25 * w (X3D's bottleneck expansion), a spatial stride of 2 at the first block of each stage
    (never a temporal one), squeeze-excite (ratio 1/16, rounded to a multiple of 8) on every other
    block starting with the first, head width 2.25 * last width, a 1x1x1 "lin_5" conv without BN,
    dropout and the linear projection. X3D-S has widths (24, 48, 96, 192), depths (1, 2, 5, 3) and
    lin_5 2048 wide; here widths (8, 16, 24, 32), depths (1, 2, 2, 1), lin_5 128 wide.

    x (N, 3, 4, 48, 48)
      stem.conv_xy (1,3,3) s(1,2,2)          (N, 8, 4, 24, 24)
      stem.conv_t  (5,1,1) depthwise, BN, ReLU (N, 8, 4, 24, 24)
      stage1 (1 block, s 2)                  (N, 8, 4, 12, 12)
      stage2 (2 blocks)                      (N, 16, 4, 6, 6)
      stage3 (2 blocks)                      (N, 24, 4, 3, 3)
      stage4 (1 block)                       (N, 32, 4, 2, 2)
      conv_5 1x1x1, BN, ReLU                 (N, 72, 4, 2, 2)
      pool (GlobalAveragePool)               (N, 72, 1, 1, 1)
      lin_5 1x1x1, ReLU                      (N, 128, 1, 1, 1)
      flatten, dropout, proj (Linear)        (N, K)
    """

    def __init__(self, num_classes=10, widths=(8, 16, 24, 32), depths=(1, 2, 2, 1), expansion=2.25,
                 head_width=128, dropout=0.5):
        super().__init__()
        w0 = widths[0]
        self.conv_xy = nn.Conv3d(3, w0, kernel_size=(1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1), bias=False)
        self.conv_t = nn.Conv3d(w0, w0, kernel_size=(5, 1, 1), padding=(2, 0, 0), groups=w0, bias=False)
        self.bn_stem = nn.BatchNorm3d(w0)
        self.relu_stem = nn.ReLU()
        blocks = []
        dim_in = w0
        for w, d in zip(widths, depths):
            inner = int(expansion * w)
            for i in range(d):
                blocks.append(X3DBottleneck(dim_in, inner, w, spatial_stride=2 if i == 0 else 1,
                                            use_se=(i % 2 == 0)))
                dim_in = w
        self.blocks = nn.Sequential(*blocks)
        head_inner = int(expansion * widths[-1])
        self.conv_5 = nn.Conv3d(dim_in, head_inner, kernel_size=1, bias=False)
        self.bn_5 = nn.BatchNorm3d(head_inner)
        self.relu_5 = nn.ReLU()
        self.pool = nn.AdaptiveAvgPool3d(1)
        self.lin_5 = nn.Conv3d(head_inner, head_width, kernel_size=1, bias=False)
        self.relu_lin = nn.ReLU()
        self.dropout = nn.Dropout(dropout)
        self.proj = nn.Linear(head_width, num_classes)

    def forward(self, x):
        x = self.relu_stem(self.bn_stem(self.conv_t(self.conv_xy(x))))
        x = self.blocks(x)
        x = self.relu_5(self.bn_5(self.conv_5(x)))
        x = self.relu_lin(self.lin_5(self.pool(x)))
        x = torch.flatten(x, 1)
        return self.proj(self.dropout(x))


# ---------------------------------------------------------------------------------------------------
# SlowFast (Feichtenhofer 2019), one clip in, two pathways


class Bottleneck3d(nn.Module):
    """ResNet bottleneck of SlowFast: (kt,1,1) conv -> BN -> ReLU -> (1,3,3) conv (spatial stride s)
    -> BN -> ReLU -> 1x1x1 conv -> BN, plus a projection shortcut (1x1x1 conv, stride s, BN) when the
    shape changes -> Add -> ReLU. kt = 1 (slow res2/res3) or 3 (fast pathway)."""

    def __init__(self, dim_in, dim_inner, dim_out, temporal_kernel, spatial_stride):
        super().__init__()
        st = (1, spatial_stride, spatial_stride)
        self.conv_a = nn.Conv3d(dim_in, dim_inner, kernel_size=(temporal_kernel, 1, 1),
                                padding=(temporal_kernel // 2, 0, 0), bias=False)
        self.bn_a = nn.BatchNorm3d(dim_inner)
        self.conv_b = nn.Conv3d(dim_inner, dim_inner, kernel_size=(1, 3, 3), stride=st, padding=(0, 1, 1),
                                bias=False)
        self.bn_b = nn.BatchNorm3d(dim_inner)
        self.conv_c = nn.Conv3d(dim_inner, dim_out, kernel_size=1, bias=False)
        self.bn_c = nn.BatchNorm3d(dim_out)
        self.relu = nn.ReLU()
        if dim_in != dim_out or spatial_stride != 1:
            self.shortcut = nn.Sequential(nn.Conv3d(dim_in, dim_out, kernel_size=1, stride=st, bias=False),
                                          nn.BatchNorm3d(dim_out))
        else:
            self.shortcut = None

    def forward(self, x):
        h = self.relu(self.bn_a(self.conv_a(x)))
        h = self.relu(self.bn_b(self.conv_b(h)))
        h = self.bn_c(self.conv_c(h))
        s = x if self.shortcut is None else self.shortcut(x)
        return self.relu(s + h)


class FastToSlow(nn.Module):
    """SlowFast's lateral connection, the "time-strided convolution" variant: a (5,1,1) conv of
    stride (alpha,1,1) from C_f fast channels to 2*C_f, BN, ReLU; concatenated to the slow features.

    slow (N, Cs, T/alpha, H, W), fast (N, Cf, T, H, W) -> (N, Cs + 2 Cf, T/alpha, H, W)"""

    def __init__(self, fast_channels, alpha, kernel=5):
        super().__init__()
        self.conv = nn.Conv3d(fast_channels, 2 * fast_channels, kernel_size=(kernel, 1, 1), stride=(alpha, 1, 1),
                              padding=(kernel // 2, 0, 0), bias=False)
        self.bn = nn.BatchNorm3d(2 * fast_channels)
        self.relu = nn.ReLU()

    def forward(self, slow, fast):
        return torch.cat([slow, self.relu(self.bn(self.conv(fast)))], dim=1)


class SlowFastTiny(nn.Module):
    """SlowFast (Feichtenhofer et al. 2019) on one clip, at tiny widths and depths.

    As in the paper: the slow pathway samples every alpha-th frame of the clip (alpha = 4 here,
    x[:, :, ::4]), the fast pathway every frame with beta = 1/4 of the slow channels (paper: 1/8);
    stems with (1,7,7) (slow) and (5,7,7) (fast) convs of spatial stride 2, BN, ReLU and a (1,3,3)
    stride-(1,2,2) max pool; a lateral after the stems and after res2 (time-strided (5,1,1) conv,
    stride alpha, 2*beta*C channels, Concat into the slow pathway); residual bottlenecks with no
    temporal kernel on the slow pathway's res2/res3 and a (3,1,1) one on the fast pathway; spatial
    stride 2 at res3; global average pool of each pathway, concatenation, dropout and a Linear.
    Widths: slow 16/32/64, fast 4/8/16 (paper 64/256/512, 8/32/64); one block per stage (paper 3, 4).

    x (N, 3, 8, 32, 32)
      slow input x[:, :, ::4]              (N, 3, 2, 32, 32)     fast input x  (N, 3, 8, 32, 32)
      slow stem conv, BN, ReLU, MaxPool    (N, 16, 2, 8, 8)      fast stem     (N, 4, 8, 8, 8)
      lateral 1 (8, 2, 8, 8), Concat       (N, 24, 2, 8, 8)
      res2                                 (N, 32, 2, 8, 8)      res2          (N, 8, 8, 8, 8)
      lateral 2 (16, 2, 8, 8), Concat      (N, 48, 2, 8, 8)
      res3 (spatial stride 2)              (N, 64, 2, 4, 4)      res3          (N, 16, 8, 4, 4)
      GlobalAveragePool, Flatten           (N, 64)                             (N, 16)
      Concat, Dropout, fc                  (N, 80) -> (N, K)
    """

    def __init__(self, num_classes=10, alpha=4, slow_widths=(16, 32, 64), fast_widths=(4, 8, 16), dropout=0.5):
        super().__init__()
        self.alpha = alpha
        s0, s1, s2 = slow_widths
        f0, f1, f2 = fast_widths
        self.slow_stem = nn.Sequential(
            nn.Conv3d(3, s0, kernel_size=(1, 7, 7), stride=(1, 2, 2), padding=(0, 3, 3), bias=False),
            nn.BatchNorm3d(s0), nn.ReLU(),
            nn.MaxPool3d(kernel_size=(1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1)))
        self.fast_stem = nn.Sequential(
            nn.Conv3d(3, f0, kernel_size=(5, 7, 7), stride=(1, 2, 2), padding=(2, 3, 3), bias=False),
            nn.BatchNorm3d(f0), nn.ReLU(),
            nn.MaxPool3d(kernel_size=(1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1)))
        self.fuse1 = FastToSlow(f0, alpha)
        self.slow_res2 = Bottleneck3d(s0 + 2 * f0, s1 // 4, s1, temporal_kernel=1, spatial_stride=1)
        self.fast_res2 = Bottleneck3d(f0, f1 // 4, f1, temporal_kernel=3, spatial_stride=1)
        self.fuse2 = FastToSlow(f1, alpha)
        self.slow_res3 = Bottleneck3d(s1 + 2 * f1, s2 // 4, s2, temporal_kernel=1, spatial_stride=2)
        self.fast_res3 = Bottleneck3d(f1, f2 // 4, f2, temporal_kernel=3, spatial_stride=2)
        self.slow_pool = nn.AdaptiveAvgPool3d(1)
        self.fast_pool = nn.AdaptiveAvgPool3d(1)
        self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(s2 + f2, num_classes)

    def forward(self, x):
        slow = self.slow_stem(x[:, :, ::self.alpha])
        fast = self.fast_stem(x)
        slow = self.fuse1(slow, fast)
        slow, fast = self.slow_res2(slow), self.fast_res2(fast)
        slow = self.fuse2(slow, fast)
        slow, fast = self.slow_res3(slow), self.fast_res3(fast)
        h = torch.cat([torch.flatten(self.slow_pool(slow), 1), torch.flatten(self.fast_pool(fast), 1)], dim=1)
        return self.fc(self.dropout(h))


# ---------------------------------------------------------------------------------------------------
# C3D (Tran 2015)


def c3d_pool_out(size, kernel, stride, pad):
    """Output length of PyTorch's MaxPool with ceil_mode=True (Caffe's rounding): the last window
    must start inside the input or the left padding, or it is dropped."""
    out = -(-(size + 2 * pad - kernel) // stride) + 1
    if (out - 1) * stride >= size + pad:
        out -= 1
    return out


class C3DTiny(nn.Module):
    """C3D (Tran et al. 2015) at tiny widths, its layer layout unchanged.

    conv1a, pool1, conv2a, pool2, conv3a, conv3b, pool3, conv4a, conv4b, pool4, conv5a, conv5b, pool5,
    fc6, fc7, fc8: 3x3x3 convs with padding 1 and ReLU; pool1 (1,2,2) stride (1,2,2), pool2-pool5
    (2,2,2) stride 2, pool5 padded (0,1,1); all pools with ceil_mode=True as Caffe rounds (the
    original runs in Caffe); fc6 and fc7 with ReLU and dropout 0.5. Widths (4, 8, 16, 16, 16) and fc
    64 (paper 64, 128, 256, 512, 512 and 4096). fc6's input width follows the clip size.

    x (N, 3, 8, 40, 40)
      conv1a, pool1                  (N, 4, 8, 20, 20)
      conv2a, pool2                  (N, 8, 4, 10, 10)
      conv3a, conv3b, pool3          (N, 16, 2, 5, 5)
      conv4a, conv4b, pool4          (N, 16, 1, 3, 3)   H, W: ceil (5-2)/2+1 = 3 (floor: 2)
      conv5a, conv5b, pool5          (N, 16, 1, 2, 2)   T: 1 (floor: 0); H, W: ceil gives 3, the
                                                        window at 4 starts in the padding: dropped
      Flatten                        (N, 64)
      fc6, ReLU, Dropout, fc7, ReLU, Dropout, fc8   (N, K)
    """

    def __init__(self, num_classes=10, clip_thw=(8, 40, 40), widths=(4, 8, 16, 16, 16), fc_width=64,
                 dropout=0.5):
        super().__init__()
        w1, w2, w3, w4, w5 = widths

        def conv(i, o):
            return nn.Conv3d(i, o, kernel_size=3, padding=1)

        self.conv1a, self.conv2a = conv(3, w1), conv(w1, w2)
        self.conv3a, self.conv3b = conv(w2, w3), conv(w3, w3)
        self.conv4a, self.conv4b = conv(w3, w4), conv(w4, w4)
        self.conv5a, self.conv5b = conv(w4, w5), conv(w5, w5)
        self.pool1 = nn.MaxPool3d(kernel_size=(1, 2, 2), stride=(1, 2, 2), ceil_mode=True)
        self.pool2 = nn.MaxPool3d(kernel_size=2, stride=2, ceil_mode=True)
        self.pool3 = nn.MaxPool3d(kernel_size=2, stride=2, ceil_mode=True)
        self.pool4 = nn.MaxPool3d(kernel_size=2, stride=2, ceil_mode=True)
        self.pool5 = nn.MaxPool3d(kernel_size=2, stride=2, padding=(0, 1, 1), ceil_mode=True)
        self.relu = nn.ReLU()
        self.flatten = nn.Flatten()
        t, h, w = clip_thw
        two = (2, 2, 2)
        pools = [((1, 2, 2), (1, 2, 2), (0, 0, 0))] + [(two, two, (0, 0, 0))] * 3 + [(two, two, (0, 1, 1))]
        for k, s, p in pools:   # (kernel, stride, padding) of pool1 .. pool5
            t, h, w = (c3d_pool_out(n, kk, ss, pp) for n, kk, ss, pp in zip((t, h, w), k, s, p))
        if min(t, h, w) < 1:
            raise ValueError(f"c3d_tiny: clip {tuple(clip_thw)} is too small for five poolings")
        self.fc6 = nn.Linear(w5 * t * h * w, fc_width)
        self.fc7 = nn.Linear(fc_width, fc_width)
        self.fc8 = nn.Linear(fc_width, num_classes)
        self.dropout6 = nn.Dropout(dropout)
        self.dropout7 = nn.Dropout(dropout)

    def forward(self, x):
        r = self.relu
        x = self.pool1(r(self.conv1a(x)))
        x = self.pool2(r(self.conv2a(x)))
        x = self.pool3(r(self.conv3b(r(self.conv3a(x)))))
        x = self.pool4(r(self.conv4b(r(self.conv4a(x)))))
        x = self.pool5(r(self.conv5b(r(self.conv5a(x)))))
        x = self.flatten(x)
        x = self.dropout6(r(self.fc6(x)))
        x = self.dropout7(r(self.fc7(x)))
        return self.fc8(x)


# ---------------------------------------------------------------------------------------------------
# Video-diffusion 3-D UNet (Ho et al. 2022)


def timestep_embedding_freqs(dim, max_period=10000.0):
    """DDPM / Transformer sinusoid frequencies: exp(-ln(max_period) * i / (dim/2)), i < dim/2."""
    half = dim // 2
    return torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32) / half)


class ResBlock3d(nn.Module):
    """DDPM/VDM residual block in 3-D: h = conv1(silu(gn1(x))); h += proj(silu(emb)) per channel;
    h = conv2(silu(gn2(h))); out = skip(x) + h (skip: identity, or a 1x1x1 conv if channels change).

    x (N, Ci, T, H, W), emb (N, D) -> (N, Co, T, H, W)"""

    def __init__(self, dim_in, dim_out, emb_dim, groups):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, dim_in)
        self.act = nn.SiLU()
        self.conv1 = nn.Conv3d(dim_in, dim_out, kernel_size=3, padding=1)
        self.emb_proj = nn.Linear(emb_dim, dim_out)
        self.norm2 = nn.GroupNorm(groups, dim_out)
        self.conv2 = nn.Conv3d(dim_out, dim_out, kernel_size=3, padding=1)
        self.skip = nn.Conv3d(dim_in, dim_out, kernel_size=1) if dim_in != dim_out else None

    def forward(self, x, emb):
        h = self.conv1(self.act(self.norm1(x)))
        h = h + self.emb_proj(self.act(emb))[:, :, None, None, None]   # (N, Co) -> (N, Co, 1, 1, 1)
        h = self.conv2(self.act(self.norm2(h)))
        return (x if self.skip is None else self.skip(x)) + h


class UNet3DBlock(nn.Module):
    """A two-level video-diffusion 3-D UNet (Ho et al. 2022) with its epsilon-prediction loss.

    forward(x, noise): x is the noisy clip x_t (N, C, T, H, W), noise the epsilon that made it (same
    shape); returns ((eps_pred - noise)**2).mean(), a scalar: DDPM's simple loss, written in the graph.

    The timestep of each batch element is fixed, a buffer `timesteps` (N,) (not in the state dict,
    persistent=False, so the export holds it as a constant rather than as a trainable initializer), as
    are the sinusoid frequencies `freqs` (D/2,); the embedding cat(sin(t f), cos(t f)) -> Linear ->
    SiLU -> Linear is therefore computed in the graph from constants (Sin, Cos). Each ResBlock adds a
    per-channel projection of it. Norms are GroupNorm (4 groups; VDM 32), activations SiLU. Level 1
    downsamples by a stride-2 3x3x3 conv in T, H and W and comes back by nn.Upsample(scale_factor=2,
    mode='nearest') and a 3x3x3 conv; level 2 downsamples by a (1,3,3) conv of stride (1,2,2) (VDM's
    space-only downsampling) and comes back by ConvTranspose3d (1,4,4), stride (1,2,2), padding
    (0,1,1). Skips: torch.cat of the encoder feature on the decoder side. VDM's temporal attention
    blocks are left out (this is the convolutional part). The batch size N is fixed by `timesteps`.

    x (N, 3, 4, 16, 16); t (N,) -> sinusoid (N, 16) -> MLP (N, 32)
      conv_in 3x3x3                          h0 (N, 8, 4, 16, 16)
      res1                                   h1 (N, 8, 4, 16, 16)   -> skip 1
      down1 3x3x3 s2                            (N, 16, 2, 8, 8)
      res2                                   h2 (N, 16, 2, 8, 8)    -> skip 2
      down2 (1,3,3) s(1,2,2)                    (N, 16, 2, 4, 4)
      mid                                       (N, 16, 2, 4, 4)
      up2 ConvTranspose3d                       (N, 16, 2, 8, 8)
      Concat skip 2, res_up2                    (N, 32, 2, 8, 8) -> (N, 16, 2, 8, 8)
      up1 Upsample x2 nearest (Resize), conv    (N, 16, 4, 16, 16) -> (N, 8, 4, 16, 16)
      Concat skip 1, res_up1                    (N, 16, 4, 16, 16) -> (N, 8, 4, 16, 16)
      GroupNorm, SiLU, conv_out                 (N, 3, 4, 16, 16) = eps_pred
      loss ((eps_pred - noise)**2).mean()       ()
    """

    def __init__(self, batch=2, channels=3, widths=(8, 16), emb_dim=16, groups=4):
        super().__init__()
        w1, w2 = widths
        d = 2 * emb_dim
        t = torch.linspace(50.0, 950.0, batch).round()
        self.register_buffer("timesteps", t, persistent=False)                          # (N,)
        self.register_buffer("freqs", timestep_embedding_freqs(emb_dim), persistent=False)  # (D/2,)
        self.emb_fc1 = nn.Linear(emb_dim, d)
        self.emb_fc2 = nn.Linear(d, d)
        self.act = nn.SiLU()
        self.conv_in = nn.Conv3d(channels, w1, kernel_size=3, padding=1)
        self.res1 = ResBlock3d(w1, w1, d, groups)
        self.down1 = nn.Conv3d(w1, w2, kernel_size=3, stride=2, padding=1)
        self.res2 = ResBlock3d(w2, w2, d, groups)
        self.down2 = nn.Conv3d(w2, w2, kernel_size=(1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1))
        self.mid = ResBlock3d(w2, w2, d, groups)
        self.up2 = nn.ConvTranspose3d(w2, w2, kernel_size=(1, 4, 4), stride=(1, 2, 2), padding=(0, 1, 1))
        self.res_up2 = ResBlock3d(2 * w2, w2, d, groups)
        self.up1 = nn.Upsample(scale_factor=2, mode="nearest")
        self.up1_conv = nn.Conv3d(w2, w1, kernel_size=3, padding=1)
        self.res_up1 = ResBlock3d(2 * w1, w1, d, groups)
        self.norm_out = nn.GroupNorm(groups, w1)
        self.conv_out = nn.Conv3d(w1, channels, kernel_size=3, padding=1)

    def embed(self):
        """The timestep embedding (N, 2 * emb_dim), from the constant buffers."""
        arg = self.timesteps[:, None] * self.freqs[None, :]                 # (N, D/2)
        e = torch.cat([torch.sin(arg), torch.cos(arg)], dim=1)              # (N, D)
        return self.emb_fc2(self.act(self.emb_fc1(e)))                      # (N, 2D)

    def forward(self, x, noise):
        emb = self.embed()
        h1 = self.res1(self.conv_in(x), emb)
        h2 = self.res2(self.down1(h1), emb)
        h = self.mid(self.down2(h2), emb)
        h = self.res_up2(torch.cat([self.up2(h), h2], dim=1), emb)
        h = self.res_up1(torch.cat([self.up1_conv(self.up1(h)), h1], dim=1), emb)
        pred = self.conv_out(self.act(self.norm_out(h)))
        return ((pred - noise) ** 2).mean()


# ---------------------------------------------------------------------------------------------------
# S3D (torchvision)


def s3d_feature_thw(t, h, w):
    """(T, H, W) of torchvision S3D's `features` output for a (T, H, W) clip.

    Temporal: conv (7, stride 2, pad 3), MaxPool (3, s2, p1), MaxPool (2, s2); spatial: conv (7, s2,
    p3), MaxPool (3, s2, p1) twice, MaxPool (3, s2, p1), MaxPool (2, s2). All floor mode."""
    def conv_pool(n, k, s, p):
        return (n + 2 * p - k) // s + 1
    t = conv_pool(conv_pool(conv_pool(t, 7, 2, 3), 3, 2, 1), 2, 2, 0)
    for k, s, p in ((7, 2, 3), (3, 2, 1), (3, 2, 1), (3, 2, 1), (2, 2, 0)):
        h, w = conv_pool(h, k, s, p), conv_pool(w, k, s, p)
    return t, h, w


def s3d_small(num_classes=10, clip_thw=(8, 64, 64), dropout=0.2):
    """torchvision's S3D with avgpool = AvgPool3d(kernel_size=s3d_feature_thw(clip), stride=1).

    Everything else is torchvision.models.video.s3d(num_classes=K, dropout=p) unchanged, including
    the parameter names and shapes (8.3M parameters at K=400)."""
    import torchvision

    thw = s3d_feature_thw(*clip_thw)
    if min(thw) < 1:
        raise ValueError(f"s3d_small: clip {tuple(clip_thw)} is too small (features would be {thw})")
    model = torchvision.models.video.s3d(num_classes=num_classes, dropout=dropout)
    model.avgpool = nn.AvgPool3d(kernel_size=thw, stride=1)
    return model


# ---------------------------------------------------------------------------------------------------


class ViViTTiny(nn.Module):
    """ViViT's factorised encoder (model 2) at a small size; see the module's docstring.

    x (N, 3, T, H, W) -> tubelets (N, D, T/2, H/8, W/8) -> tokens (N*T/2, S, D), S = H*W/64 -> class token
    and positions (N*T/2, S+1, D) -> spatial layers -> each group's class token (N, T/2, D) -> temporal
    class token (N, T/2+1, D) -> temporal layers -> LayerNorm of the class token -> logits (N, K).
    Dropout p in the layers' attention, MLP and residual paths."""

    def __init__(self, num_classes=10, clip_thw=(4, 32, 32), dim=32, heads=2, tubelet=(2, 8, 8), depth_s=1,
                 depth_t=1, dropout=0.1):
        super().__init__()
        t, h, w = clip_thw
        if t % tubelet[0] or h % tubelet[1] or w % tubelet[2]:
            raise ValueError(f"vivit_tiny: clip {tuple(clip_thw)} is not a whole number of {tubelet} tubelets")
        self.nt, self.ns = t // tubelet[0], (h // tubelet[1]) * (w // tubelet[2])
        self.embed = nn.Conv3d(3, dim, tubelet, tubelet)
        self.cls_s = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos_s = nn.Parameter(torch.randn(1, self.ns + 1, dim) * 0.02)
        self.cls_t = nn.Parameter(torch.randn(1, 1, dim) * 0.02)

        def layer():
            return nn.TransformerEncoderLayer(dim, heads, 2 * dim, dropout=dropout, activation="gelu",
                                              batch_first=True, norm_first=True)
        self.spatial = nn.ModuleList([layer() for _ in range(depth_s)])
        self.temporal = nn.ModuleList([layer() for _ in range(depth_t)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        b = x.shape[0]
        x = self.embed(x).flatten(3).permute(0, 2, 3, 1)          # (N, T/2, S, D)
        x = x.reshape(b * self.nt, self.ns, x.shape[-1])
        x = torch.cat([self.cls_s.expand(b * self.nt, -1, -1), x], 1) + self.pos_s
        for blk in self.spatial:
            x = blk(x)
        x = x[:, 0].reshape(b, self.nt, x.shape[-1])              # the frame groups' class tokens
        x = torch.cat([self.cls_t.expand(b, -1, -1), x], 1)
        for blk in self.temporal:
            x = blk(x)
        return self.head(self.norm(x[:, 0]))


class HFVideoClassifier(nn.Module):
    """A Hugging Face video classifier on vcc's clip layout: x (N, C, T, H, W) -> pixel_values (N, T, C, H,
    W) -> the model's logits (N, K). The model's parameters are under "hf."."""

    def __init__(self, model):
        super().__init__()
        self.hf = model

    def forward(self, x):
        return self.hf(pixel_values=x.permute(0, 2, 1, 3, 4)).logits


def hf_video(name, num_classes, clip_thw, dropout):
    """videomae_tiny or timesformer_tiny (see the module's docstring) from the transformers package."""
    import transformers
    t, h, w = clip_thw
    if h != w:
        raise ValueError(f"{name}: needs square frames, got {h}x{w}")
    common = dict(image_size=h, patch_size=8, num_channels=3, num_frames=t, hidden_size=64, num_hidden_layers=2,
                  num_attention_heads=4, intermediate_size=128, num_labels=num_classes, hidden_act="gelu",
                  hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    if name == "videomae_tiny":
        cfg = transformers.VideoMAEConfig(tubelet_size=2, use_mean_pooling=True, **common)
        return HFVideoClassifier(transformers.VideoMAEForVideoClassification(cfg))
    cfg = transformers.TimesformerConfig(drop_path_rate=0.0, attention_type="divided_space_time", **common)
    return HFVideoClassifier(transformers.TimesformerForVideoClassification(cfg))


# the tiny MViTs' blocks: (heads, in, out, kernel_q, stride_q, stride_kv); kernel_kv is (3, 3, 3) throughout
_MVIT_TINY = {
    "mvit_v1_tiny": [(1, 16, 32, [], [], [1, 4, 4]), (2, 32, 32, [3, 3, 3], [1, 2, 2], [1, 2, 2]),
                     (2, 32, 64, [], [], [1, 2, 2]), (4, 64, 64, [3, 3, 3], [1, 2, 2], [1, 1, 1])],
    "mvit_v2_tiny": [(1, 16, 16, [3, 3, 3], [1, 1, 1], [1, 4, 4]), (2, 16, 32, [3, 3, 3], [1, 2, 2], [1, 2, 2]),
                     (2, 32, 32, [3, 3, 3], [1, 1, 1], [1, 2, 2]), (4, 32, 64, [3, 3, 3], [1, 2, 2], [1, 1, 1])],
}


def mvit(name, num_classes, clip_thw, dropout):
    """mvit_v1_b, mvit_v2_s, mvit_v1_tiny or mvit_v2_tiny (see the module's docstring), stochastic depth 0."""
    import torchvision
    from torchvision.models.video.mvit import MSBlockConfig, MViT
    t, h, w = clip_thw
    if name in ("mvit_v1_b", "mvit_v2_s"):
        if (t, h, w) != (16, 224, 224):
            raise ValueError(f"{name}: its position embeddings are sized for 16x224x224, got {t}x{h}x{w}")
        make = getattr(torchvision.models.video, name)
        return make(num_classes=num_classes, dropout=dropout, stochastic_depth_prob=0.0)
    if t % 2 or h % 4 or w % 4:
        raise ValueError(f"{name}: the patch embedding strides (2, 4, 4) must divide the clip, got {t}x{h}x{w}")
    blocks = [MSBlockConfig(num_heads=nh, input_channels=ci, output_channels=co, kernel_q=kq,
                            kernel_kv=[3, 3, 3], stride_q=sq, stride_kv=skv)
              for nh, ci, co, kq, sq, skv in _MVIT_TINY[name]]
    v2 = name == "mvit_v2_tiny"
    return MViT(spatial_size=(h, w), temporal_size=t, block_setting=blocks, residual_pool=v2,
                residual_with_cls_embed=False, rel_pos_embed=v2, proj_after_attn=v2, dropout=dropout,
                stochastic_depth_prob=0.0, num_classes=num_classes)


def build_model(name, num_classes=10, clip=None, dropout=None):
    """A freshly initialised model (draws from torch's RNG: seed it first), in train() mode.

    name         one of MODELS
    num_classes  K (ignored by unet3d_block)
    clip         (N, C, T, H, W) the model will see; default DEFAULT_SHAPES[name]. c3d_tiny sizes fc6
                 and s3d_small its avgpool from (T, H, W); unet3d_block takes N (its timesteps) and C.
    dropout      the dropout probability; None: the paper's (DEFAULT_DROPOUT)
    """
    if name not in MODELS:
        raise ValueError(f"unknown model '{name}' (known: {', '.join(MODELS)})")
    n, c, t, h, w = clip if clip is not None else DEFAULT_SHAPES[name]
    p = DEFAULT_DROPOUT[name] if dropout is None else float(dropout)
    if name != "unet3d_block" and c != 3:
        raise ValueError(f"{name}: expects C=3 channels, got C={c}")
    if name == "x3d_s_tiny":
        model = X3DTiny(num_classes=num_classes, dropout=p)
    elif name == "slowfast_tiny":
        model = SlowFastTiny(num_classes=num_classes, dropout=p)
    elif name == "c3d_tiny":
        model = C3DTiny(num_classes=num_classes, clip_thw=(t, h, w), dropout=p)
    elif name == "unet3d_block":
        model = UNet3DBlock(batch=n, channels=c)
    elif name == "s3d":
        import torchvision
        model = torchvision.models.video.s3d(num_classes=num_classes, dropout=p)
    elif name == "vivit_tiny":
        model = ViViTTiny(num_classes=num_classes, clip_thw=(t, h, w), dropout=p)
    elif name in ("videomae_tiny", "timesformer_tiny"):
        model = hf_video(name, num_classes, (t, h, w), p)
    elif name.startswith("mvit_"):
        model = mvit(name, num_classes, (t, h, w), p)
    else:
        model = s3d_small(num_classes=num_classes, clip_thw=(t, h, w), dropout=p)
    return model.train()
