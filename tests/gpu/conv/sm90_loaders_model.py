#!/usr/bin/env python3
"""A CPU model of the sm90a conv stage loaders (kdl::sm90::ConvFpropLoader, ConvDgradLoader, ConvWgradLoader in
include/kdl/conv_sm90.cuh): their tile and k-tile coordinates, the partial channel blocks, the flipped taps,
the im2col corners and the image walks, run through a model of TMA's im2col mode (the walk over the bounding
box's grid, as the GPU-verified loaders use it: origin from the lower corner to size - 1 + the upper corner, traversal
strides, then the next row and image; outside the tensor zero) and of tiled loads (outside zero), built into
the implicit GEMM tile by tile and compared with a direct convolution. It checks the loaders' arithmetic,
not the hardware: the GPU suite does that. Keep it in step with conv_sm90.cuh. Needs numpy ("SKIP:" without)."""
import itertools
import sys

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy not available")
    sys.exit(0)

def im2col_load(T, lower, upper, tstride, c0, w0, h0, n0, ow, oh, pixels):
    """T: [N, H, W, C]. Returns [pixels, 64]: the walk from (n0, h0, w0) over the bounding box grid."""
    N, H, W, C = T.shape
    out = np.zeros((pixels, 64))
    w, h, n = w0, h0, n0
    for i in range(pixels):
        y, x = h + oh, w + ow
        if 0 <= n < N and 0 <= y < H and 0 <= x < W:
            for j in range(64):
                if 0 <= c0 + j < C: out[i, j] = T[n, y, x, c0 + j]
        w += tstride[0]
        if w > W - 1 + upper[0]:
            w = lower[0]; h += tstride[1]
            if h > H - 1 + upper[1]:
                h = lower[1]; n += 1
    return out

def conv_dims(n, h, w, c, k, r, s, ph, pw, sh, sw, dh, dw):
    p = (h + 2 * ph - dh * (r - 1) - 1) // sh + 1
    q = (w + 2 * pw - dw * (s - 1) - 1) // sw + 1
    return p, q

def wgrad_ref(X, dY, r, s, ph, pw, sh, sw, dh, dw):
    N, H, W, C = X.shape; _, P, Q, K = dY.shape
    dW = np.zeros((K, r, s, C))
    for b, pp, qq, rr, ss in itertools.product(range(N), range(P), range(Q), range(r), range(s)):
        y, x = pp * sh - ph + rr * dh, qq * sw - pw + ss * dw
        if 0 <= y < H and 0 <= x < W: dW[:, rr, ss, :] += np.outer(dY[b, pp, qq], X[b, y, x])
    return dW

def dgrad_ref(dY, Wt, H, W, ph, pw, dh, dw):
    N, P, Q, K = dY.shape; _, r, s, C = Wt.shape
    dX = np.zeros((N, H, W, C))
    for b, pp, qq, rr, ss in itertools.product(range(N), range(P), range(Q), range(r), range(s)):
        y, x = pp - ph + rr * dh, qq - pw + ss * dw
        if 0 <= y < H and 0 <= x < W: dX[b, y, x] += dY[b, pp, qq] @ Wt[:, rr, ss, :]
    return dX

def wgrad_model(X, dY, r, s, ph, pw, sh, sw, dh, dw, TM, TN, rows_mode):
    N, H, W, C = X.shape; _, P, Q, K = dY.shape
    PQ = P * Q; kpi = (PQ + 63) // 64
    Kg = N * PQ if rows_mode else N * kpi * 64
    ktiles = (Kg + 63) // 64
    taps = r * s; Ng = taps * C
    D = np.zeros((K, Ng))
    eh, ew = dh * (r - 1), dw * (s - 1)
    lower, upper = (-pw, -ph), (pw - ew, ph - eh)
    dYflat = dY.reshape(N, PQ, K)
    for tm in range((K + TM - 1) // TM):
        for tn in range((Ng + TN - 1) // TN):
            m0, n0 = tm * TM, tn * TN
            acc = np.zeros((TM, TN))
            for kt in range(ktiles):
                if rows_mode:
                    image, pixel = divmod(kt * 64, PQ)
                    # A: dY as {k, n*pq}: rows kt*64.. , zero past the end
                    A = np.zeros((TM, 64))
                    flat = dYflat.reshape(N * PQ, K)
                    for i in range(64):
                        g = kt * 64 + i
                        if g < N * PQ:
                            for mm in range(TM):
                                if m0 + mm < K: A[mm, i] = flat[g, m0 + mm]
                else:
                    image, t = divmod(kt, kpi); pixel = t * 64
                    A = np.zeros((TM, 64))
                    for i in range(64):
                        g = pixel + i
                        if g < PQ:
                            for mm in range(TM):
                                if m0 + mm < K: A[mm, i] = dYflat[image, g, m0 + mm]
                p0, q0 = divmod(pixel, Q)
                w0, h0 = q0 * sw - pw, p0 * sh - ph
                B = np.zeros((64, TN))
                for b in range(TN // 64):
                    tap, c0 = divmod(n0 + b * 64, C)
                    if tap >= taps: tap = taps - 1
                    rr, ss = divmod(tap, s)
                    B[:, b * 64:(b + 1) * 64] = im2col_load(X, lower, upper, (sw, sh), c0, w0, h0, image, ss * dw, rr * dh, 64)
                acc += A @ B
            for mm in range(TM):
                for nn in range(TN):
                    if m0 + mm < K and n0 + nn < Ng: D[m0 + mm, n0 + nn] = acc[mm, nn]
    return D.reshape(K, r, s, C)

def implicit_gemm(M, cols, ktiles, batches, TM, TN, rows_mode, grid, load_a, load_b, out):
    """The GemmSm90 walk the fprop and dgrad loaders feed: per batch (an image, or one with rows_mode), tiles of
    TM rows (pixels of a `grid`-pixel image grid, crossing images with rows_mode) by TN columns, acc = sum over
    k-tiles of load_a(batch, m0, kt) @ load_b(n0, kt), stored into out[image, pixel, column] in range."""
    for batch in range(batches):
        for m0, n0 in itertools.product(range(0, M, TM), range(0, cols, TN)):
            acc = np.zeros((TM, TN))
            for kt in range(ktiles):
                acc += load_a(batch, m0, kt) @ load_b(n0, kt)
            for mm in range(min(TM, M - m0)):
                img, pix = divmod(m0 + mm, grid) if rows_mode else (batch, m0 + mm)
                nn = min(TN, cols - n0)
                out[img, pix, n0:n0 + nn] = acc[mm, :nn]

def tile_origin(batch, m0, rows_mode, grid, width):
    """The image, row and column of a tile's first pixel (rows_mode: the pixel index runs across images)."""
    image, pixel = divmod(m0, grid) if rows_mode else (batch, m0)
    return (image,) + divmod(pixel, width)

def dgrad_model(dY, Wt, H, W, ph, pw, dh, dw, TM, TN, rows_mode):
    N, P, Q, K = dY.shape; _, r, s, C = Wt.shape
    taps = r * s
    lower = (pw - dw * (s - 1), ph - dh * (r - 1)); upper = (-pw, -ph)
    def load_a(batch, m0, kt):
        cb, tap = divmod(kt, taps); rr, ss = divmod(tap, s)
        image, y0, x0 = tile_origin(batch, m0, rows_mode, H * W, W)
        return im2col_load(dY, lower, upper, (1, 1), cb * 64, x0 + lower[0], y0 + lower[1], image, ss * dw, rr * dh, TM)
    def load_b(n0, kt):  # W as {c, r*s, k}: per 64 columns a box 64 (c) x 1 x 64 (k) at the flipped tap; outside zero
        cb, tap = divmod(kt, taps); wr, ws = divmod(taps - 1 - tap, s)
        B = np.zeros((64, TN))
        kk, cc = min(64, K - cb * 64), min(TN, C - n0)
        B[:kk, :cc] = Wt[cb * 64:cb * 64 + kk, wr, ws, n0:n0 + cc]
        return B
    out = np.zeros((N, H * W, C))
    implicit_gemm(N * H * W if rows_mode else H * W, C, taps * ((K + 63) // 64), 1 if rows_mode else N, TM, TN,
                  rows_mode, H * W, load_a, load_b, out)
    return out.reshape(N, H, W, C)

def fprop_ref(X, Wt, ph, pw, sh, sw, dh, dw):
    N, H, W, C = X.shape; K, r, s, _ = Wt.shape
    P, Q = conv_dims(N, H, W, C, K, r, s, ph, pw, sh, sw, dh, dw)
    Y = np.zeros((N, P, Q, K))
    for b, pp, qq, rr, ss in itertools.product(range(N), range(P), range(Q), range(r), range(s)):
        y, x = pp * sh - ph + rr * dh, qq * sw - pw + ss * dw
        if 0 <= y < H and 0 <= x < W: Y[b, pp, qq] += Wt[:, rr, ss, :] @ X[b, y, x]
    return Y

def fprop_model(X, Wt, ph, pw, sh, sw, dh, dw, TM, TN, rows_mode):
    N, H, W, C = X.shape; K, r, s, _ = Wt.shape
    P, Q = conv_dims(N, H, W, C, K, r, s, ph, pw, sh, sw, dh, dw)
    taps = r * s
    lower = (-pw, -ph); upper = (pw - dw * (s - 1), ph - dh * (r - 1))
    def load_a(batch, m0, kt):
        cb, tap = divmod(kt, taps); rr, ss = divmod(tap, s)
        image, p0, q0 = tile_origin(batch, m0, rows_mode, P * Q, Q)
        return im2col_load(X, lower, upper, (sw, sh), cb * 64, q0 * sw - pw, p0 * sh - ph, image, ss * dw, rr * dh, TM)
    def load_b(n0, kt):  # W as {c, r*s, k}: box 64 x 1 x TN at (cb * 64, tap, n0); outside zero
        cb, tap = divmod(kt, taps); rr, ss = divmod(tap, s)
        B = np.zeros((64, TN))
        cc, kk = min(64, C - cb * 64), min(TN, K - n0)
        B[:cc, :kk] = Wt[n0:n0 + kk, rr, ss, cb * 64:cb * 64 + cc].T
        return B
    out = np.zeros((N, P * Q, K))
    implicit_gemm(N * P * Q if rows_mode else P * Q, K, taps * ((C + 63) // 64), 1 if rows_mode else N, TM, TN,
                  rows_mode, P * Q, load_a, load_b, out)
    return out.reshape(N, P, Q, K)

rng = np.random.default_rng(1)  # small integers: every sum exact
bad = 0


def check(kind, case, ref, model, tiles):
    """The model against the reference for both image modes and every tile; returns the failures."""
    fails = 0
    for rows in (True, False):
        for TM, TN in tiles:
            got = model(TM, TN, rows)
            if not np.array_equal(got, ref):
                fails += 1
                print(f"{kind} FAIL", case, rows, TM, TN, np.abs(got - ref).max())
    return fails


fcases = [(3, 9, 11, 24, 40, 3, 3, 1, 1, 1, 1, 1, 1), (2, 15, 13, 72, 72, 3, 3, 2, 2, 2, 2, 2, 2),
          (1, 17, 19, 8, 136, 5, 5, 2, 2, 2, 2, 1, 1), (2, 7, 7, 136, 64, 1, 1, 0, 0, 1, 1, 1, 1),
          (2, 10, 9, 40, 48, 3, 3, 0, 1, 2, 1, 1, 2), (1, 20, 30, 64, 48, 5, 3, 2, 0, 3, 1, 1, 3)]
for (n, h, w, c, k, r, s, ph, pw, sh, sw, dh, dw) in fcases:
    X = rng.integers(-3, 4, (n, h, w, c)).astype(float); Wt = rng.integers(-3, 4, (k, r, s, c)).astype(float)
    bad += check("FPROP", (n, h, w, c, k, r, s, ph, pw, sh, sw, dh, dw), fprop_ref(X, Wt, ph, pw, sh, sw, dh, dw),
                 lambda TM, TN, rows: fprop_model(X, Wt, ph, pw, sh, sw, dh, dw, TM, TN, rows), ((128, 128), (128, 256)))
wcases = [(2, 9, 11, 64, 40, 3, 3, 1, 1, 1, 1, 1, 1), (2, 15, 13, 128, 72, 3, 3, 2, 2, 2, 2, 2, 2),
          (1, 17, 19, 64, 136, 5, 5, 2, 2, 2, 2, 1, 1), (2, 14, 14, 64, 24, 7, 7, 3, 3, 2, 2, 1, 1),
          (3, 7, 7, 64, 64, 1, 1, 0, 0, 1, 1, 1, 1), (2, 10, 9, 64, 48, 3, 3, 0, 1, 2, 1, 1, 2),
          (1, 20, 30, 64, 48, 5, 3, 2, 0, 3, 1, 1, 3)]
for (n, h, w, c, k, r, s, ph, pw, sh, sw, dh, dw) in wcases:
    p, q = conv_dims(n, h, w, c, k, r, s, ph, pw, sh, sw, dh, dw)
    X = rng.integers(-3, 4, (n, h, w, c)).astype(float); dY = rng.integers(-3, 4, (n, p, q, k)).astype(float)
    bad += check("WGRAD", (n, h, w, c, k, r, s, ph, pw, sh, sw, dh, dw), wgrad_ref(X, dY, r, s, ph, pw, sh, sw, dh, dw),
                 lambda TM, TN, rows: wgrad_model(X, dY, r, s, ph, pw, sh, sw, dh, dw, TM, TN, rows),
                 ((128, 128), (64, 128), (128, 256)))

dcases = [(3, 9, 11, 64, 40, 3, 3, 1, 1, 1, 1), (2, 15, 13, 72, 128, 3, 3, 2, 2, 2, 2), (1, 17, 19, 24, 136, 5, 5, 2, 2, 1, 1),
          (2, 14, 14, 64, 24, 7, 7, 3, 3, 1, 1), (2, 7, 7, 192, 64, 1, 1, 0, 0, 1, 1), (2, 10, 9, 40, 48, 3, 3, 0, 1, 1, 2),
          (1, 20, 30, 64, 48, 5, 3, 2, 0, 1, 3), (2, 12, 12, 16, 8, 3, 3, 0, 0, 1, 1), (1, 8, 8, 64, 64, 1, 1, 1, 1, 1, 1)]
for (n, h, w, c, k, r, s, ph, pw, dh, dw) in dcases:
    p, q = conv_dims(n, h, w, c, k, r, s, ph, pw, 1, 1, dh, dw)
    dY = rng.integers(-3, 4, (n, p, q, k)).astype(float); Wt = rng.integers(-3, 4, (k, r, s, c)).astype(float)
    bad += check("DGRAD", (n, h, w, c, k, r, s, ph, pw, dh, dw), dgrad_ref(dY, Wt, h, w, ph, pw, dh, dw),
                 lambda TM, TN, rows: dgrad_model(dY, Wt, h, w, ph, pw, dh, dw, TM, TN, rows), ((128, 128), (128, 256)))
print(f"{bad} failed")
sys.exit(1 if bad else 0)
