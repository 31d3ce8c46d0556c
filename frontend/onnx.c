/*
 * onnx.c — the ONNX loader: a serialized onnx.ModelProto (read with protobuf-c) -> the forward IR.
 *
 * Requires: a path to an ONNX file; ctx->shapes for symbolic input dims.
 * Produces: a VccGraph with initializers (data in host order), Constant outputs (data), graph inputs,
 *           one FORWARD node per ONNX node and the graph outputs; node outputs are untyped (dtype
 *           VCC_DT_UNDEF, rank 0, dims -1) until passes/shape. frontend.h lists every convention.
 *
 * The file is untrusted: every count, size and name read from it is checked before use, and no
 * allocation is sized by a number the file claims unless bytes of that size actually exist (in the
 * parsed message or in the external data file).
 *
 * Loading runs in stages; a stage with errors ends the load after reporting all of its problems:
 *   1. read + nesting check + unpack + header (ir_version, graph, opset)
 *   2. initializers, graph inputs, Constant nodes' values and every node output name (definitions)
 *   3. nodes: op lookup (unsupported ones collected into one line), input resolution, attributes
 *   4. graph outputs
 *
 * Letter legend used in shape comments: N batch, C channels, T frames, H height, W width.
 */
#define _XOPEN_SOURCE 700 /* POSIX.1-2008 with XSI: realpath, pread, O_NOFOLLOW */

#include "frontend.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx.pb-c.h"

/* Subgraphs (If, Loop, Scan bodies) nested at most this deep below the main graph. */
#define VCC_ONNX_MAX_GRAPH_DEPTH 32

/* TensorProto.DataType values vcc reads. */
enum { DT_FLOAT = 1, DT_INT64 = 7, DT_BOOL = 9, DT_DOUBLE = 11 };

/* ======================================================================== loader state, diagnostics */

/* Name -> tensor index, open addressing (vcc_tensor_find is a linear scan; models have thousands). */
typedef struct {
    int *slot; /* tensor index, -1 empty */
    size_t cap; /* power of two */
    size_t used;
} NameMap;

typedef struct Loader {
    VccCtx *ctx;
    VccGraph *g;
    struct Loader *parent; /* the enclosing graph's loader while a subgraph loads, else NULL */
    int *outer, nouter;    /* subgraph: its placeholders for values of enclosing scopes */
    const char *path;
    char *dir;       /* folder of the model file, for external data */
    char *dir_real;  /* realpath(dir), computed on first use */
    VccStatus status;
    NameMap names;
    bool *binding_used; /* ctx->nshapes entries */
    bool binding_unknown; /* a binding names nothing in the graph: unbound symbolic dims are not reported */
    /* values of an element type vcc does not have: defined (so that names resolve) but untyped; their
     * problems are recorded once the nodes reading them are known */
    struct Unsup {
        int t;              /* the placeholder tensor */
        char *what;         /* "initializer 'w'", "Constant '/c'", "input 'x'" */
        char *dtype;        /* the ONNX element type ("BOOL", "DOUBLE", ...) */
    } *unsup;
    size_t nunsup, cap_unsup;
} Loader;

/* Define name as an untyped placeholder for a value of an element type vcc does not support; the
 * problem is recorded by record_unsupported_types with the nodes that read it. */
static void add_unsupported_value(Loader *L, const char *name, VccTensorKind kind, const char *what,
                                  const char *dtype);

/* Report one problem (vcc_error escapes what names from the file could carry). */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void fail(Loader *L, VccStatus st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *msg = vcc_vstrfmt(fmt, ap);
    va_end(ap);
    vcc_error(L->ctx, "%s", msg);
    free(msg);
    if (L->status == VCC_OK) L->status = st;
}

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int name_find(const Loader *L, const char *name) {
    const NameMap *m = &L->names;
    if (!m->cap) return -1;
    for (size_t i = hash_str(name) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        int t = m->slot[i];
        if (t < 0) return -1;
        if (strcmp(L->g->tensors[t].name, name) == 0) return t;
    }
}

static void name_insert(Loader *L, int t) {
    NameMap *m = &L->names;
    if (2 * (m->used + 1) > m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 256;
        int *slot = vcc_malloc(cap * sizeof *slot);
        for (size_t i = 0; i < cap; i++) slot[i] = -1;
        for (size_t i = 0; i < m->cap; i++) {
            int u = m->slot[i];
            if (u < 0) continue;
            size_t j = hash_str(L->g->tensors[u].name) & (cap - 1);
            while (slot[j] >= 0) j = (j + 1) & (cap - 1);
            slot[j] = u;
        }
        free(m->slot);
        m->slot = slot;
        m->cap = cap;
    }
    size_t j = hash_str(L->g->tensors[t].name) & (m->cap - 1);
    while (m->slot[j] >= 0) j = (j + 1) & (m->cap - 1);
    m->slot[j] = t;
    m->used++;
}

/* Add a tensor under a name not yet defined (the caller checked with name_find). */
static int add_tensor(Loader *L, const char *name, VccDType dt, const VccShape *shape, VccTensorKind kind) {
    int t = vcc_tensor_add(L->g, name, dt, shape, kind);
    name_insert(L, t);
    return t;
}

static const char *str_or_empty(const char *s) { return s ? s : ""; }

const char *vcc_onnx_dtype_name(int dt) {
    static const char *const names[] = {
        "UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING",
        "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16",
        "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4",
        "FLOAT4E2M1",
    };
    if (dt < 0 || dt >= (int)(sizeof names / sizeof names[0])) return "UNKNOWN";
    return names[dt];
}

static const char *attr_type_name(int t) {
    switch (t) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: return "FLOAT";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: return "INT";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: return "STRING";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: return "TENSOR";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH: return "GRAPH";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR: return "SPARSE_TENSOR";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO: return "TYPE_PROTO";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: return "FLOATS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS: return "INTS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: return "STRINGS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS: return "TENSORS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS: return "GRAPHS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS: return "SPARSE_TENSORS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS: return "TYPE_PROTOS";
    default: return "UNDEFINED";
    }
}

/* ======================================================================== file reading */

/* Read exactly n bytes at offset off of fd into buf; false on error or end of file. */
static bool pread_all(int fd, void *buf, size_t n, off_t off) {
    unsigned char *p = buf;
    while (n > 0) {
        size_t chunk = n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n;
        ssize_t r = pread(fd, p, chunk, off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= (size_t)r;
        off += r;
    }
    return true;
}

/* ======================================================================== nesting before unpacking */

/* protobuf-c unpacks nested messages by recursion, with no depth limit: a file a few tens of KB long
 * can nest graphs thousands deep (If -> then_branch -> If -> ...) and overflow the stack. The only path
 * by which messages of vcc's onnx.proto contain themselves is ModelProto.graph (7) -> GraphProto.node
 * (1) -> NodeProto.attribute (5) -> AttributeProto.g (6) -> GraphProto; every other field of a message
 * kind below (unknown fields included) is skipped without descent. */
enum { WIRE_MODEL, WIRE_GRAPH, WIRE_NODE, WIRE_ATTR, WIRE_OTHER };

/* The message kind of field `field` of a message of kind `kind` on that path, else WIRE_OTHER. */
static int wire_child(int kind, uint64_t field) {
    switch (kind) {
    case WIRE_MODEL: return field == 7 ? WIRE_GRAPH : WIRE_OTHER;
    case WIRE_GRAPH: return field == 1 ? WIRE_NODE : WIRE_OTHER;
    case WIRE_NODE: return field == 5 ? WIRE_ATTR : WIRE_OTHER;
    case WIRE_ATTR: return field == 6 ? WIRE_GRAPH : WIRE_OTHER;
    default: return WIRE_OTHER;
    }
}

/* A base-128 varint at *p (protobuf encoding), not past end; false when it is cut off or too long. */
static bool wire_varint(const unsigned char **p, const unsigned char *end, uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        unsigned char b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return true;
    }
    return false;
}

/* Whether the message of kind `kind` in [p, end) holds graphs nested (GraphProto within GraphProto,
 * through a node's attribute) more than `left` deep. Malformed wire data ends the scan with false: the
 * unpacking that follows reports it. Recursion at most VCC_ONNX_MAX_GRAPH_DEPTH + 1 graphs deep. */
static bool wire_too_deep(const unsigned char *p, const unsigned char *end, int kind, int left) {
    if (kind == WIRE_GRAPH && left-- == 0) return true;
    while (p < end) {
        uint64_t key, n;
        if (!wire_varint(&p, end, &key)) return false;
        switch (key & 7) {
        case 0: /* varint */
            if (!wire_varint(&p, end, &n)) return false;
            break;
        case 1: /* 64-bit */
            if (end - p < 8) return false;
            p += 8;
            break;
        case 5: /* 32-bit */
            if (end - p < 4) return false;
            p += 4;
            break;
        case 2: /* length-delimited: a submessage, a string, bytes or a packed array */
            if (!wire_varint(&p, end, &n) || n > (uint64_t)(end - p)) return false;
            if (wire_child(kind, key >> 3) != WIRE_OTHER && wire_too_deep(p, p + n, wire_child(kind, key >> 3), left))
                return true;
            p += n;
            break;
        default: return false; /* groups (3, 4) and invalid types: protobuf-c's to refuse */
        }
    }
    return false;
}

/* The whole model file into a malloc'd buffer. */
static VccStatus read_model_file(Loader *L, unsigned char **buf, size_t *len) {
    *buf = NULL;
    *len = 0;
    int fd = open(L->path, O_RDONLY | O_NONBLOCK); /* a FIFO must not block: it is refused below */
    if (fd < 0) {
        fail(L, VCC_ERR_IO, "cannot open: %s", strerror(errno));
        return L->status;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        fail(L, VCC_ERR_IO, "cannot stat: %s", strerror(errno));
        close(fd);
        return L->status;
    }
    if (!S_ISREG(st.st_mode)) {
        fail(L, VCC_ERR_IO, "not a regular file");
        close(fd);
        return L->status;
    }
    if (st.st_size == 0) {
        fail(L, VCC_ERR_PARSE, "not a valid ONNX model (empty file)");
        close(fd);
        return L->status;
    }
    if ((uintmax_t)st.st_size > SIZE_MAX / 2) {
        fail(L, VCC_ERR_IO, "file too large (%jd bytes)", (intmax_t)st.st_size);
        close(fd);
        return L->status;
    }
    size_t n = (size_t)st.st_size;
    unsigned char *p = malloc(n);
    if (!p) {
        fail(L, VCC_ERR_IO, "out of memory reading %zu bytes", n);
        close(fd);
        return L->status;
    }
    if (!pread_all(fd, p, n, 0)) {
        fail(L, VCC_ERR_IO, "read failed: %s", errno ? strerror(errno) : "file shrank while reading");
        free(p);
        close(fd);
        return L->status;
    }
    close(fd);
    *buf = p;
    *len = n;
    return VCC_OK;
}

/* ======================================================================== tensor data */

static bool host_is_little_endian(void) {
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* Copy n little-endian elements of size esize (1, 2, 4 or 8) from src to dst in host order. */
static void copy_le(void *dst, const unsigned char *src, size_t n, size_t esize) {
    if (host_is_little_endian()) {
        memcpy(dst, src, n * esize);
        return;
    }
    unsigned char *d = dst;
    for (size_t i = 0; i < n; i++)
        for (size_t b = 0; b < esize; b++) d[i * esize + b] = src[i * esize + esize - 1 - b];
}

/* Parse a non-negative decimal integer that fits int64; false otherwise. */
static bool parse_u63(const char *s, int64_t *out) {
    if (!s || !*s) return false;
    int64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return false;
        int d = *s - '0';
        if (v > (INT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* True if location has a ".." component (separators '/' and '\\'). */
static bool has_dotdot(const char *loc) {
    const char *p = loc;
    while (*p) {
        const char *q = p;
        while (*q && *q != '/' && *q != '\\') q++;
        if (q - p == 2 && p[0] == '.' && p[1] == '.') return true;
        p = *q ? q + 1 : q;
    }
    return false;
}

/* A StringStringEntryProto field (bytes on the wire) as a malloc'd C string; NULL when it holds a NUL
 * byte, which a C string cannot carry. An absent field is "". */
static char *entry_string(const ProtobufCBinaryData *b, protobuf_c_boolean has) {
    if (!has || !b->len) return vcc_strdup("");
    if (memchr(b->data, 0, b->len)) return NULL;
    char *s = vcc_malloc(b->len + 1);
    memcpy(s, b->data, b->len);
    s[b->len] = 0;
    return s;
}

static unsigned char *read_external_entries(Loader *L, char **keys, char **values, size_t n, const char *what,
                                            size_t want);

/* Read the external data of an initializer: exactly want bytes, returned malloc'd (NULL on error,
 * reported). what names the tensor for messages ("initializer 'conv.weight'"). */
static unsigned char *read_external(Loader *L, const Onnx__TensorProto *tp, const char *what, size_t want) {
    size_t n = tp->n_external_data;
    char **keys = vcc_calloc(n + 1, sizeof(char *)), **values = vcc_calloc(n + 1, sizeof(char *));
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        keys[i] = entry_string(&e->key, e->has_key);
        values[i] = entry_string(&e->value, e->has_value);
        if (!keys[i] || !values[i]) {
            fail(L, VCC_ERR_PARSE, "%s: external data entry %zu holds a NUL byte in its %s", what, i,
                 !keys[i] ? "key" : "value");
            ok = false;
        }
    }
    unsigned char *buf = ok ? read_external_entries(L, keys, values, n, what, want) : NULL;
    for (size_t i = 0; i < n; i++) {
        free(keys[i]);
        free(values[i]);
    }
    free(keys);
    free(values);
    return buf;
}

/* read_external on the entries as strings. */
static unsigned char *read_external_entries(Loader *L, char **keys, char **values, size_t n, const char *what,
                                            size_t want) {
    const char *location = NULL;
    int64_t offset = 0, length = -1;
    bool have_offset = false;
    for (size_t i = 0; i < n; i++) {
        const char *key = keys[i], *value = values[i];
        if (strcmp(key, "location") == 0) {
            if (location) {
                fail(L, VCC_ERR_PARSE, "%s: external data has two 'location' entries", what);
                return NULL;
            }
            location = value;
        } else if (strcmp(key, "offset") == 0 || strcmp(key, "length") == 0) {
            bool is_offset = key[0] == 'o';
            int64_t *dst = is_offset ? &offset : &length;
            if (is_offset ? have_offset : length >= 0) {
                fail(L, VCC_ERR_PARSE, "%s: external data '%s' is given twice", what, key);
                return NULL;
            }
            if (!parse_u63(value, dst)) {
                bool digits = *value && strspn(value, "0123456789") == strlen(value);
                fail(L, VCC_ERR_PARSE, "%s: external data %s '%s' %s", what, key, value,
                     digits ? "is out of range (at most 2^63-1)" : "is not a non-negative integer");
                return NULL;
            }
            have_offset |= is_offset;
        } /* "checksum" and unknown keys are ignored */
    }
    if (!location || !*location) {
        fail(L, VCC_ERR_PARSE, "%s: external data has no 'location'", what);
        return NULL;
    }
    if (location[0] == '/' || location[0] == '\\' || (location[0] && location[1] == ':')) {
        fail(L, VCC_ERR_PARSE, "%s: external data location '%s' is an absolute path (refused: it must be "
             "relative to the model's folder)", what, location);
        return NULL;
    }
    if (has_dotdot(location)) {
        fail(L, VCC_ERR_PARSE, "%s: external data location '%s' contains '..' (refused: it must stay in "
             "the model's folder)", what, location);
        return NULL;
    }
    if (!L->dir_real) {
        L->dir_real = realpath(L->dir, NULL);
        if (!L->dir_real) {
            fail(L, VCC_ERR_IO, "%s: cannot resolve the model's folder '%s': %s", what, L->dir, strerror(errno));
            return NULL;
        }
    }
    size_t plen = strlen(L->dir) + 1 + strlen(location) + 1;
    char *joined = vcc_malloc(plen);
    snprintf(joined, plen, "%s/%s", L->dir, location);
    char *real = realpath(joined, NULL);
    if (!real) {
        fail(L, VCC_ERR_IO, "%s: external data file '%s': %s", what, joined, strerror(errno));
        free(joined);
        return NULL;
    }
    size_t dlen = strlen(L->dir_real);
    bool inside = strcmp(L->dir_real, "/") == 0 ||
                  (strncmp(real, L->dir_real, dlen) == 0 && real[dlen] == '/');
    if (!inside) {
        if (strcmp(real, L->dir_real) == 0)
            fail(L, VCC_ERR_PARSE, "%s: external data location '%s' is the model's folder itself, not a file", what,
                 location);
        else
            fail(L, VCC_ERR_PARSE, "%s: external data location '%s' resolves to '%s', outside the model's folder "
                 "(refused)", what, location, real);
        free(joined);
        free(real);
        return NULL;
    }
    unsigned char *buf = NULL;
    int fd = open(real, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    if (fd < 0) {
        fail(L, VCC_ERR_IO, "%s: external data file '%s': %s", what, joined, strerror(errno));
    } else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        fail(L, VCC_ERR_IO, "%s: external data file '%s' is not a regular file", what, joined);
    } else if (offset > (int64_t)st.st_size) {
        fail(L, VCC_ERR_PARSE, "%s: external data offset %jd is past the end of '%s' (%jd bytes)", what,
             (intmax_t)offset, joined, (intmax_t)st.st_size);
    } else if (length >= 0 && (uint64_t)length != (uint64_t)want) {
        fail(L, VCC_ERR_PARSE, "%s: external data length %jd does not match its dims and type (%zu bytes)",
             what, (intmax_t)length, want);
    } else if ((uint64_t)((int64_t)st.st_size - offset) < (uint64_t)want ||
               (length < 0 && (uint64_t)((int64_t)st.st_size - offset) != (uint64_t)want)) {
        fail(L, VCC_ERR_PARSE, "%s: external data file '%s' has %jd bytes from offset %jd, expected %zu", what,
             joined, (intmax_t)((int64_t)st.st_size - offset), (intmax_t)offset, want);
    } else if (!(buf = malloc(want ? want : 1))) { /* a sparse file can claim more than memory holds */
        fail(L, VCC_ERR_IO, "%s: cannot allocate the %zu bytes of its external data in '%s'", what, want, joined);
    } else {
        if (want && !pread_all(fd, buf, want, (off_t)offset)) {
            fail(L, VCC_ERR_IO, "%s: reading external data file '%s' failed", what, joined);
            free(buf);
            buf = NULL;
        }
    }
    if (fd >= 0) close(fd);
    free(joined);
    free(real);
    return buf;
}

/* Decode a TensorProto into a new tensor named name, data in host order. what names it in messages.
 * Returns the tensor index, or -1 (reported). */
static int add_tensor_proto(Loader *L, const Onnx__TensorProto *tp, const char *name, const char *what,
                            VccTensorKind float_kind) {
    if (tp->segment) {
        fail(L, VCC_ERR_UNSUPPORTED, "%s: segmented tensors are not supported", what);
        return -1;
    }
    int odt = tp->has_data_type ? tp->data_type : 0;
    VccDType dt = vcc_dtype_from_onnx(odt);
    if (dt == VCC_DT_UNDEF) {
        add_unsupported_value(L, name, float_kind == VCC_T_PARAM ? VCC_T_PARAM : VCC_T_CONST, what,
                              vcc_onnx_dtype_name(odt));
        return -1;
    }
    size_t src_esize = vcc_dtype_size(dt); /* bytes per element in raw_data (and in vcc) */
    if (tp->n_dims > VCC_MAX_RANK) {
        fail(L, VCC_ERR_UNSUPPORTED, "%s: %zu dims, at most %d are supported", what, tp->n_dims, VCC_MAX_RANK);
        return -1;
    }
    VccShape shape = {.rank = (int)tp->n_dims};
    for (int i = 0; i < VCC_MAX_RANK; i++) shape.dims[i] = -1;
    /* numel * 8 must fit int64 (and size_t): every byte count below is then exact */
    const int64_t max_numel = INT64_MAX / 8;
    int64_t numel = 1;
    for (size_t i = 0; i < tp->n_dims; i++) {
        int64_t d = tp->dims[i];
        if (d < 0) {
            fail(L, VCC_ERR_PARSE, "%s: dim %zu is negative (%jd)", what, i, (intmax_t)d);
            return -1;
        }
        if (d != 0 && numel > max_numel / d) {
            fail(L, VCC_ERR_PARSE, "%s: dims overflow (the element count does not fit 64 bits)", what);
            return -1;
        }
        numel *= d;
        shape.dims[i] = d;
    }
    if ((uint64_t)numel > SIZE_MAX / 8) {
        fail(L, VCC_ERR_PARSE, "%s: too many elements (%jd)", what, (intmax_t)numel);
        return -1;
    }
    size_t n = (size_t)numel, src_bytes = n * src_esize, dst_bytes = n * vcc_dtype_size(dt);

    bool external = tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    if (tp->has_data_location && !external &&
        tp->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT) {
        fail(L, VCC_ERR_UNSUPPORTED, "%s: data_location %d is not supported", what, (int)tp->data_location);
        return -1;
    }
    /* TensorProto's comments on its fields: BOOL, INT8, INT16, INT32, UINT8 and UINT16 values sit in
     * int32_data, UINT32 and UINT64 in uint64_data */
    const char *field = odt == DT_FLOAT    ? "float_data"
                        : odt == DT_INT64  ? "int64_data"
                        : odt == DT_DOUBLE ? "double_data"
                        : dt == VCC_U32 || dt == VCC_U64 ? "uint64_data"
                                           : "int32_data";
    size_t typed = odt == DT_FLOAT    ? tp->n_float_data
                   : odt == DT_INT64  ? tp->n_int64_data
                   : odt == DT_DOUBLE ? tp->n_double_data
                   : field[0] == 'u'  ? tp->n_uint64_data
                                      : tp->n_int32_data;
    size_t other_typed = tp->n_float_data + tp->n_int64_data + tp->n_int32_data + tp->n_double_data +
                         tp->n_uint64_data + tp->n_string_data - typed;
    if (other_typed) {
        fail(L, VCC_ERR_PARSE, "%s: holds data in a field that does not match its element type %s", what,
             vcc_onnx_dtype_name(odt));
        return -1;
    }
    int sources = (tp->has_raw_data ? 1 : 0) + (typed ? 1 : 0) + (external ? 1 : 0);
    if (sources > 1) {
        fail(L, VCC_ERR_PARSE, "%s: data given more than once (raw_data, typed field, external data)", what);
        return -1;
    }

    unsigned char *src = NULL; /* little-endian file bytes, when not typed */
    bool src_owned = false;
    if (external) {
        src = read_external(L, tp, what, src_bytes);
        if (!src) return -1;
        src_owned = true;
    } else if (tp->has_raw_data) {
        if (tp->raw_data.len != src_bytes) {
            fail(L, VCC_ERR_PARSE, "%s: raw_data has %zu bytes, its dims and type need %zu", what,
                 tp->raw_data.len, src_bytes);
            return -1;
        }
        src = tp->raw_data.data;
    } else if (typed) {
        if (typed != n) {
            fail(L, VCC_ERR_PARSE, "%s: %s holds %zu values, its dims need %zu", what, field, typed, n);
            return -1;
        }
    } else if (n != 0) {
        fail(L, VCC_ERR_PARSE, "%s: has no data", what);
        return -1;
    }

    void *data = malloc(dst_bytes ? dst_bytes : 1); /* non-NULL even for an empty tensor */
    if (!data) {
        fail(L, VCC_ERR_IO, "%s: cannot allocate the %zu bytes of its values", what, dst_bytes);
        return -1;
    }
    if (odt == DT_BOOL) {
        unsigned char *d = data;
        for (size_t i = 0; i < n; i++) d[i] = src ? src[i] != 0 : tp->int32_data[i] != 0;
    } else if (src) {
        copy_le(data, src, n, src_esize);
    } else if (n && (field[0] == 'i' && odt != DT_INT64)) { /* narrowed from int32_data: the low bits */
        for (size_t i = 0; i < n; i++) {
            uint32_t v = (uint32_t)tp->int32_data[i];
            if (src_esize == 4) ((uint32_t *)data)[i] = v;
            else if (src_esize == 2) ((uint16_t *)data)[i] = (uint16_t)v;
            else ((uint8_t *)data)[i] = (uint8_t)v;
        }
    } else if (n && field[0] == 'u') { /* from uint64_data */
        for (size_t i = 0; i < n; i++) {
            if (src_esize == 8) ((uint64_t *)data)[i] = tp->uint64_data[i];
            else ((uint32_t *)data)[i] = (uint32_t)tp->uint64_data[i];
        }
    } else if (n) {
        memcpy(data, odt == DT_FLOAT    ? (const void *)tp->float_data
                     : odt == DT_DOUBLE ? (const void *)tp->double_data
                                        : (const void *)tp->int64_data,
               dst_bytes);
    }
    if (src_owned) free(src);

    VccTensorKind kind = dt == VCC_F32 ? float_kind : VCC_T_CONST;
    int t = add_tensor(L, name, dt, &shape, kind);
    L->g->tensors[t].data = data;
    L->g->tensors[t].data_bytes = dst_bytes;
    return t;
}

/* ======================================================================== definitions: initializers, inputs, Constants */

static void load_initializers(Loader *L, const Onnx__GraphProto *gp) {
    if (gp->n_sparse_initializer) {
        const Onnx__SparseTensorProto *sp = gp->sparse_initializer[0];
        fail(L, VCC_ERR_UNSUPPORTED, "sparse initializers are not supported ('%s')",
             sp->values ? str_or_empty(sp->values->name) : "");
    }
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        const char *name = str_or_empty(tp->name);
        if (!*name) {
            fail(L, VCC_ERR_PARSE, "initializer %zu has no name", i);
            continue;
        }
        char *what = vcc_malloc(strlen(name) + 32);
        sprintf(what, "initializer '%s'", name);
        if (name_find(L, name) >= 0)
            fail(L, VCC_ERR_PARSE, "%s is defined twice", what);
        else
            add_tensor_proto(L, tp, name, what, VCC_T_PARAM);
        free(what);
    }
}

/* The option binding sb was given with, as its messages name it. */
static const char *bind_opt(const VccShapeBinding *sb) { return sb->opt ? sb->opt : "--shape"; }

/* The binding in ctx->shapes with this name, or -1. */
static int find_binding(const Loader *L, const char *name) {
    for (int i = 0; i < L->ctx->nshapes; i++)
        if (L->ctx->shapes[i].name && strcmp(L->ctx->shapes[i].name, name) == 0) return i;
    return -1;
}

/* Reports each binding in ctx->shapes that names nothing: with gp, before the inputs load, those that
 * name no graph input and no symbolic dim of one (then sets L->binding_unknown); with NULL, after they
 * loaded, those that no input took (L->binding_used), such as the name of an initializer also listed as
 * an input. */
static void report_unknown_bindings(Loader *L, const Onnx__GraphProto *gp) {
    for (int b = 0; b < L->ctx->nshapes; b++) {
        const VccShapeBinding *sb = &L->ctx->shapes[b];
        bool known = !gp && L->binding_used[b];
        for (size_t i = 0; gp && !known && i < gp->n_input; i++) {
            const Onnx__ValueInfoProto *vi = gp->input[i];
            known = sb->name && vi->name && !strcmp(sb->name, vi->name);
            const Onnx__TypeProto *tp = vi->type;
            if (known || !tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type ||
                !tp->tensor_type->shape)
                continue;
            const Onnx__TensorShapeProto *sh = tp->tensor_type->shape;
            for (size_t j = 0; !known && j < sh->n_dim; j++)
                known = sb->name && sh->dim[j]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                        sh->dim[j]->dim_param && !strcmp(sb->name, sh->dim[j]->dim_param);
        }
        if (known) continue;
        if (gp) L->binding_unknown = true;
        fail(L, VCC_ERR_INVALID, "%s %s: no graph input or symbolic input dim has that name%s", bind_opt(sb),
             str_or_empty(sb->name),
             sb->opt ? " (--fit varies a symbolic dim: export the model with one, e.g. "
                       "models/export_torchvision.py --dynamic-batch, or name it with --vary)"
                     : "");
    }
}

/* "2x3x8x112x112" into buf: fixed dims as they are, unbound ones as 2 (an example size). */
static void format_example(char *buf, size_t len, const int64_t *dims, int rank) {
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < rank && k < len; i++) {
        int w = dims[i] >= 0 ? snprintf(buf + k, len - k, "%s%jd", i ? "x" : "", (intmax_t)dims[i])
                             : snprintf(buf + k, len - k, "%s2", i ? "x" : "");
        if (w < 0) break;
        k += (size_t)w;
    }
}

static void load_input(Loader *L, const Onnx__ValueInfoProto *vi, size_t index) {
    const char *name = str_or_empty(vi->name);
    if (!*name) {
        fail(L, VCC_ERR_PARSE, "graph input %zu has no name", index);
        return;
    }
    int existing = name_find(L, name);
    if (existing >= 0) {
        /* an initializer also listed as an input (older exporters): the initializer's tensor */
        if (L->g->tensors[existing].kind == VCC_T_INPUT)
            fail(L, VCC_ERR_PARSE, "graph input '%s' is listed twice", name);
        return;
    }
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) {
        fail(L, VCC_ERR_UNSUPPORTED, "input '%s' is not a tensor (or has no type)", name);
        return;
    }
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    int odt = tt->has_elem_type ? tt->elem_type : 0;
    VccDType dt = vcc_dtype_from_onnx(odt);
    if (dt == VCC_DT_UNDEF) {
        char *what = vcc_strfmt("input '%s'", name);
        add_unsupported_value(L, name, VCC_T_INPUT, what, vcc_onnx_dtype_name(odt));
        free(what);
        return;
    }
    int rank = -1; /* -1: the file gives no shape */
    if (tt->shape) {
        if (tt->shape->n_dim > VCC_MAX_RANK) {
            fail(L, VCC_ERR_UNSUPPORTED, "input '%s' has %zu dims, at most %d are supported", name,
                 tt->shape->n_dim, VCC_MAX_RANK);
            return;
        }
        rank = (int)tt->shape->n_dim;
    }
    VccShape shape = {.rank = rank < 0 ? 0 : rank};
    const char *param[VCC_MAX_RANK] = {0};
    for (int i = 0; i < VCC_MAX_RANK; i++) shape.dims[i] = -1;
    for (int i = 0; i < rank; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (d->dim_value < 0) {
                fail(L, VCC_ERR_PARSE, "input '%s' dim %d is negative (%jd)", name, i, (intmax_t)d->dim_value);
                return;
            }
            shape.dims[i] = d->dim_value;
        } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param &&
                   *d->dim_param) {
            param[i] = d->dim_param;
        }
    }

    bool ok = true;
    int b = find_binding(L, name);
    if (b >= 0) { /* the input's full shape */
        const VccShapeBinding *sb = &L->ctx->shapes[b];
        L->binding_used[b] = true;
        if (sb->rank < 0 || sb->rank > VCC_MAX_RANK || (rank >= 0 && sb->rank != rank)) {
            fail(L, VCC_ERR_SHAPE, "%s %s: gives %d dims, input '%s' has %d", bind_opt(sb), sb->name, sb->rank, name,
                 rank);
            return;
        }
        shape.rank = sb->rank;
        for (int i = 0; i < sb->rank; i++) {
            if (sb->dims[i] < 1) {
                fail(L, VCC_ERR_INVALID, "%s %s: dim %d must be a positive integer", bind_opt(sb), sb->name, i);
                ok = false;
            } else if (i < rank && shape.dims[i] >= 0 && shape.dims[i] != sb->dims[i]) {
                fail(L, VCC_ERR_SHAPE, "%s %s: dim %d is %jd, but input '%s' fixes it to %jd", bind_opt(sb), sb->name, i,
                     (intmax_t)sb->dims[i], name, (intmax_t)shape.dims[i]);
                ok = false;
            }
            shape.dims[i] = sb->dims[i];
        }
        /* a binding of one of its dim_params as well must agree */
        for (int i = 0; i < rank && i < sb->rank; i++) {
            int pb = param[i] ? find_binding(L, param[i]) : -1;
            if (pb < 0 || pb == b) continue;
            const VccShapeBinding *pbind = &L->ctx->shapes[pb];
            L->binding_used[pb] = true;
            if (pbind->rank != 1 || pbind->dims[0] != sb->dims[i]) {
                fail(L, VCC_ERR_SHAPE, "%s %s and %s %s disagree on input '%s' dim %d", bind_opt(pbind),
                     pbind->name, bind_opt(sb), sb->name, name, i);
                ok = false;
            }
        }
    } else if (rank < 0) {
        fail(L, VCC_ERR_SHAPE, "input '%s' has no shape in the model; give it with --shape %s=NxCx...", name,
             name);
        return;
    } else {
        char example[256];
        for (int i = 0; i < rank; i++) {
            if (shape.dims[i] >= 0) continue;
            int pb = param[i] ? find_binding(L, param[i]) : -1;
            if (pb >= 0) {
                const VccShapeBinding *sb = &L->ctx->shapes[pb];
                L->binding_used[pb] = true;
                if (sb->rank != 1 || sb->dims[0] < 1) {
                    fail(L, VCC_ERR_INVALID, "%s %s: a symbolic dim takes one positive value", bind_opt(sb), sb->name);
                    ok = false;
                } else {
                    shape.dims[i] = sb->dims[0];
                }
                continue;
            }
            ok = false;
            if (L->binding_unknown) continue; /* the misnamed binding was reported instead */
            format_example(example, sizeof example, shape.dims, rank);
            if (param[i])
                fail(L, VCC_ERR_SHAPE, "input '%s' dim %d ('%s') is symbolic; bind it to a size, e.g. --shape %s=2 "
                     "(that dim) or --shape %s=%s (the whole input)", name, i, param[i], param[i], name, example);
            else
                fail(L, VCC_ERR_SHAPE, "input '%s' dim %d is unknown; bind it to a size, e.g. --shape %s=%s", name, i,
                     name, example);
        }
    }
    if (!ok) return;
    int t = add_tensor(L, name, dt, &shape, VCC_T_INPUT);
    for (int i = 0; i < rank; i++)
        if (param[i]) L->g->tensors[t].dim_param[i] = vcc_strdup(param[i]);
    L->g->inputs = vcc_realloc(L->g->inputs, sizeof(int) * (size_t)(L->g->ninputs + 1));
    L->g->inputs[L->g->ninputs++] = t;
}

static bool is_default_domain(const char *d) { return !d || !*d || strcmp(d, "ai.onnx") == 0; }

/* Attribute type, inferred from the value fields when the file leaves it out (IR version 1). */
static int attr_type(const Onnx__AttributeProto *a) {
    if (a->has_type) return (int)a->type;
    if (a->has_f) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    if (a->has_i) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    if (a->has_s) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    if (a->t) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    if (a->n_floats) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    if (a->n_ints) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    if (a->n_strings) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
    return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
}

/* The value attributes of ONNX Constant by opset: value (TENSOR) since 1, sparse_value (SPARSE_TENSOR)
 * since 11, value_float(s), value_int(s), value_string(s) since 12 (ONNX Operators, "Constant"). */
static const struct {
    const char *name;
    int type, since;
    VccDType dt; /* VCC_DT_UNDEF: a form vcc refuses */
    const char *why;
} constant_forms[] = {
    {"value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR, 1, VCC_DT_UNDEF, NULL},
    {"sparse_value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR, 11, VCC_DT_UNDEF,
     "sparse tensors are not supported"},
    {"value_float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, 12, VCC_F32, NULL},
    {"value_floats", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS, 12, VCC_F32, NULL},
    {"value_int", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, 12, VCC_I64, NULL},
    {"value_ints", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, 12, VCC_I64, NULL},
    {"value_string", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING, 12, VCC_DT_UNDEF, "string tensors are not supported"},
    {"value_strings", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS, 12, VCC_DT_UNDEF,
     "string tensors are not supported"},
};

/* A Constant form vcc refuses: one problem for the report (group "Constant attribute 'a'"), and the
 * output defined untyped so that the names of its readers still resolve. */
static void constant_refused(Loader *L, const char *label, const char *out, const char *an, const char *why) {
    char b[48];
    char *group = vcc_strfmt("Constant attribute '%s'", an);
    vcc_unsupported(L->ctx, VCC_PROB_ATTR, group, "'%s' (%s)", vcc_short_name(label, b, sizeof b), why);
    free(group);
    VccShape unknown = {.rank = 0};
    for (int d = 0; d < VCC_MAX_RANK; d++) unknown.dims[d] = -1;
    add_tensor(L, out, VCC_DT_UNDEF, &unknown, VCC_T_CONST);
}

/* A Constant node: its output becomes a CONST tensor with data (any form of constant_forms vcc has, in
 * the opsets that define it). label names the node in messages. */
static void load_constant(Loader *L, const Onnx__NodeProto *np, const char *label) {
    if (np->n_input != 0 || np->n_output != 1 || !np->output[0] || !*np->output[0]) {
        fail(L, VCC_ERR_PARSE, "node '%s' (Constant): expected no inputs and one named output", label);
        return;
    }
    const char *out = np->output[0];
    if (name_find(L, out) >= 0) {
        fail(L, VCC_ERR_PARSE, "node '%s' (Constant): output '%s' is already defined", label, out);
        return;
    }
    if (np->n_attribute != 1) {
        fail(L, VCC_ERR_PARSE, "node '%s' (Constant): expected exactly one attribute, found %zu", label,
             np->n_attribute);
        return;
    }
    const Onnx__AttributeProto *a = np->attribute[0];
    const char *an = str_or_empty(a->name);
    int at = attr_type(a);
    size_t f = 0, nforms = sizeof constant_forms / sizeof constant_forms[0];
    while (f < nforms && strcmp(constant_forms[f].name, an) != 0) f++;
    char why[96];
    if (f == nforms) {
        constant_refused(L, label, out, an, "not an attribute of Constant");
        return;
    }
    if (L->g->opset < constant_forms[f].since) {
        snprintf(why, sizeof why, "exists from opset %d; the model imports opset %lld", constant_forms[f].since,
                 (long long)L->g->opset);
        constant_refused(L, label, out, an, why);
        return;
    }
    if (at != constant_forms[f].type) {
        snprintf(why, sizeof why, "has type %s, ONNX defines %s", attr_type_name(at),
                 attr_type_name(constant_forms[f].type));
        constant_refused(L, label, out, an, why);
        return;
    }
    if (constant_forms[f].why) {
        constant_refused(L, label, out, an, constant_forms[f].why);
        return;
    }
    if (at == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR) {
        if (!a->t) {
            fail(L, VCC_ERR_PARSE, "node '%s' (Constant): attribute 'value' holds no tensor", label);
            return;
        }
        size_t len = strlen(label) + 32;
        char *what = vcc_malloc(len);
        snprintf(what, len, "Constant '%s'", label);
        add_tensor_proto(L, a->t, out, what, VCC_T_CONST);
        free(what);
        return;
    }
    VccShape shape = {0};
    for (int i = 0; i < VCC_MAX_RANK; i++) shape.dims[i] = -1;
    VccDType dt = constant_forms[f].dt;
    size_t n = 1;
    const void *src = dt == VCC_F32 ? (const void *)&a->f : (const void *)&a->i;
    if (at == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS || at == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS) {
        n = dt == VCC_F32 ? a->n_floats : a->n_ints;
        src = dt == VCC_F32 ? (const void *)a->floats : (const void *)a->ints;
        shape.rank = 1;
        shape.dims[0] = (int64_t)n;
    }
    size_t bytes = n * vcc_dtype_size(dt);
    void *data = vcc_malloc(bytes ? bytes : 1);
    if (bytes) memcpy(data, src, bytes);
    int t = add_tensor(L, out, dt, &shape, VCC_T_CONST);
    L->g->tensors[t].data = data;
    L->g->tensors[t].data_bytes = bytes;
}

/* ======================================================================== nodes */

/* ConstantOfShape's value attribute (a one-element TENSOR) becomes the node's second input, a CONST
 * tensor "<node>.value" holding it: vcc's attributes hold no tensors. */
static void value_attr_as_input(Loader *L, VccNode *n, const Onnx__TensorProto *tp, const char *label) {
    char *name = vcc_strfmt("%s.value", label);
    for (int i = 1; name_find(L, name) >= 0; i++) {
        free(name);
        name = vcc_strfmt("%s.value_%d", label, i);
    }
    char *what = vcc_strfmt("ConstantOfShape '%s' attribute 'value'", label);
    add_tensor_proto(L, tp, name, what, VCC_T_CONST);
    int t = name_find(L, name); /* also the untyped placeholder of a value of another element type */
    if (t >= 0) {
        n->in = vcc_realloc(n->in, sizeof(int) * (size_t)(n->nin + 1));
        if (n->nin == 0) n->in[n->nin++] = -1; /* no shape input: the shape rule reports it */
        n->in[n->nin++] = t;
    }
    free(what);
    free(name);
}

/* Copy np's attributes onto n. An attribute of a type vcc does not represent (TENSOR, GRAPH, ...) is a
 * problem for the report, except on a node whose op is unsupported anyway (it is dropped then), and
 * ConstantOfShape's value, which becomes an input (value_attr_as_input). */
static void copy_attributes(Loader *L, VccNode *n, const Onnx__NodeProto *np, const char *label, bool op_unsupported) {
    const char *op = str_or_empty(np->op_type);
    bool value_seen = false;
    for (size_t k = 0; k < np->n_attribute; k++) {
        const Onnx__AttributeProto *a = np->attribute[k];
        const char *an = str_or_empty(a->name);
        if (!*an) {
            fail(L, VCC_ERR_PARSE, "node '%s' (%s): attribute %zu has no name", label, op, k);
            continue;
        }
        if (vcc_attr_get(n, an) || (value_seen && strcmp(an, "value") == 0)) {
            fail(L, VCC_ERR_PARSE, "node '%s' (%s): attribute '%s' is given twice", label, op, an);
            continue;
        }
        if (n->op == VCC_OP_CONSTANT_OF_SHAPE && strcmp(an, "value") == 0 && !(a->ref_attr_name && *a->ref_attr_name) &&
            attr_type(a) == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR && a->t) {
            value_attr_as_input(L, n, a->t, label);
            value_seen = true;
            continue;
        }
        if (a->ref_attr_name && *a->ref_attr_name) {
            if (!op_unsupported) {
                char b[48];
                char *group = vcc_strfmt("%s attribute '%s'", op, an);
                vcc_unsupported(L->ctx, VCC_PROB_ATTR, group, "'%s' (refers to a function attribute)",
                                vcc_short_name(label, b, sizeof b));
                free(group);
            }
            continue;
        }
        int at = attr_type(a);
        static const int64_t no_ints[1];
        static const float no_floats[1];
        switch (at) {
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: vcc_attr_set_int(n, an, a->i); break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: vcc_attr_set_float(n, an, a->f); break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: {
            bool ints = at == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
            size_t cnt = ints ? a->n_ints : a->n_floats;
            if (cnt > INT_MAX) {
                fail(L, VCC_ERR_UNSUPPORTED, "node '%s' (%s): attribute '%s' has too many values", label, op, an);
                break;
            }
            if (ints)
                vcc_attr_set_ints(n, an, cnt ? a->ints : no_ints, (int)cnt);
            else
                vcc_attr_set_floats(n, an, cnt ? a->floats : no_floats, (int)cnt);
            break;
        }
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: {
            size_t len = a->s.len;
            if (len && memchr(a->s.data, 0, len)) {
                fail(L, VCC_ERR_UNSUPPORTED, "node '%s' (%s): string attribute '%s' contains a NUL byte", label,
                     op, an);
                break;
            }
            char *s = vcc_malloc(len + 1);
            if (len) memcpy(s, a->s.data, len);
            s[len] = 0;
            vcc_attr_set_string(n, an, s);
            free(s);
            break;
        }
        default:
            if (!op_unsupported) {
                char b[48];
                char *group = vcc_strfmt("%s attribute '%s'", op, an);
                vcc_unsupported(L->ctx, VCC_PROB_ATTR, group, "'%s' (type %s, which vcc does not support)",
                                vcc_short_name(label, b, sizeof b), attr_type_name(at));
                free(group);
            }
            break;
        }
    }
}

/* Stage 2 for nodes: Constants become CONST tensors (skip[i] set: they add no node); the outputs of
 * every other node, supported or not, become untyped ACT tensors so that names resolve in stage 3. */
static void define_node_outputs(Loader *L, const Onnx__GraphProto *gp, char **labels, bool *skip) {
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        const char *op = str_or_empty(np->op_type);
        if (is_default_domain(np->domain) && strcmp(op, "Constant") == 0) {
            load_constant(L, np, labels[i]);
            skip[i] = true;
            continue;
        }
        for (size_t k = 0; k < np->n_output; k++) {
            const char *on = str_or_empty(np->output[k]);
            if (!*on) continue; /* absent optional output */
            if (name_find(L, on) >= 0) {
                fail(L, VCC_ERR_PARSE, "node '%s' (%s): output '%s' is already defined", labels[i], op, on);
                continue;
            }
            VccShape unknown = {.rank = 0};
            for (int d = 0; d < VCC_MAX_RANK; d++) unknown.dims[d] = -1;
            add_tensor(L, on, VCC_DT_UNDEF, &unknown, VCC_T_ACT);
        }
    }
}

static void node_labels(Loader *L, const Onnx__GraphProto *gp, char **labels);
static void define_node_outputs(Loader *L, const Onnx__GraphProto *gp, char **labels, bool *skip);
static void load_nodes(Loader *L, const Onnx__GraphProto *gp, char **labels, const bool *skip);
static void load_outputs(Loader *L, const Onnx__GraphProto *gp);
static void record_unsupported_types(Loader *L, const Onnx__GraphProto *gp, char **labels);

/* A subgraph reads name, which it does not define: when an enclosing scope defines it (or, recursively,
 * reads it from its own enclosing scope), an untyped placeholder named so is defined here and marked as
 * an outer value (L->outer); false at the top level or when no scope defines it. */
static bool outer_value(Loader *L, const char *name) {
    if (!L->parent || (name_find(L->parent, name) < 0 && !outer_value(L->parent, name))) return false;
    VccShape unknown = {.rank = 0};
    int t = add_tensor(L, name, VCC_DT_UNDEF, &unknown, VCC_T_ACT);
    L->outer = vcc_realloc(L->outer, sizeof(int) * (size_t)(L->nouter + 1));
    L->outer[L->nouter++] = t;
    return true;
}

/* Load the GraphProto gp, an attribute of a node of L's graph, as a graph of its own (VccSubgraph): its
 * inputs untyped (an If branch has none; a Loop body's are the iteration number, the condition and the
 * loop-carried values), values of enclosing scopes read by name (placeholders, VccSubgraph.outer). Returns 1 + its index in the top-level
 * graph's table, 0 on error. */
static int load_subgraph(Loader *L, const Onnx__GraphProto *gp) {
    int depth = 0;
    for (const Loader *p = L; p->parent; p = p->parent) depth++;
    if (depth > VCC_ONNX_MAX_GRAPH_DEPTH) {
        fail(L, VCC_ERR_UNSUPPORTED, "subgraphs nested more than %d deep (If, Loop or Scan bodies within each other)",
             VCC_ONNX_MAX_GRAPH_DEPTH);
        return 0;
    }
    Loader S = {.ctx = L->ctx, .path = L->path, .dir = L->dir, .status = VCC_OK, .parent = L, .g = vcc_graph_new()};
    S.g->opset = L->g->opset;
    load_initializers(&S, gp);
    for (size_t i = 0; i < gp->n_input && S.status == VCC_OK; i++) {
        const char *name = str_or_empty(gp->input[i]->name);
        if (!*name || name_find(&S, name) >= 0) {
            fail(&S, VCC_ERR_PARSE, "subgraph input %zu has no name or is defined twice", i);
            break;
        }
        VccShape unknown = {.rank = 0};
        int t = add_tensor(&S, name, VCC_DT_UNDEF, &unknown, VCC_T_ACT);
        S.g->inputs = vcc_realloc(S.g->inputs, sizeof(int) * (size_t)(S.g->ninputs + 1));
        S.g->inputs[S.g->ninputs++] = t;
    }
    char **labels = vcc_calloc(gp->n_node + 1, sizeof *labels);
    bool *skip = vcc_calloc(gp->n_node + 1, sizeof *skip);
    node_labels(&S, gp, labels);
    if (S.status == VCC_OK) define_node_outputs(&S, gp, labels, skip);
    if (S.status == VCC_OK) load_nodes(&S, gp, labels, skip);
    if (S.status == VCC_OK) load_outputs(&S, gp);
    if (S.status == VCC_OK) record_unsupported_types(&S, gp, labels);
    for (size_t i = 0; i < gp->n_node; i++) free(labels[i]);
    free(labels);
    free(skip);
    free(S.dir_real);
    free(S.names.slot);
    for (size_t u = 0; u < S.nunsup; u++) {
        free(S.unsup[u].what);
        free(S.unsup[u].dtype);
    }
    free(S.unsup);
    if (S.status) {
        L->status = S.status;
        free(S.outer);
        vcc_graph_free(S.g);
        return 0;
    }
    Loader *top = L;
    while (top->parent) top = top->parent;
    return 1 + vcc_subgraph_add(top->g, S.g, S.outer, S.nouter);
}

/* The GRAPH attributes of If (then_branch, else_branch) and Loop (body) on node id, loaded as subgraphs
 * (passes/ctrlflow.c expands the node once its condition or trip count is known). */
static void load_subgraphs(Loader *L, int id, const Onnx__NodeProto *np, const char *label) {
    const char *op = str_or_empty(np->op_type);
    static const char *const names[][2] = {{"then_branch", "else_branch"}, {"body", NULL}};
    int which = strcmp(op, "If") == 0 ? 0 : strcmp(op, "Loop") == 0 ? 1 : -1;
    if (which < 0) return;
    for (int s = 0; s < 2 && names[which][s]; s++) {
        const Onnx__AttributeProto *a = NULL;
        for (size_t k = 0; k < np->n_attribute && !a; k++)
            if (strcmp(str_or_empty(np->attribute[k]->name), names[which][s]) == 0) a = np->attribute[k];
        if (!a || attr_type(a) != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH || !a->g) {
            fail(L, VCC_ERR_PARSE, "node '%s' (%s): attribute '%s' (a graph) is missing", label, op, names[which][s]);
            return;
        }
        int sub = load_subgraph(L, a->g);
        if (!sub) return;
        /* the values of enclosing scopes it reads: extra inputs of the node (defined here, or read by this
         * graph from its own enclosing scope: outer_value made a placeholder) */
        Loader *top = L;
        while (top->parent) top = top->parent;
        const VccSubgraph *S = &top->g->subs[sub - 1];
        VccNode *n = &L->g->nodes[id];
        n->in = vcc_realloc(n->in, sizeof(int) * (size_t)(n->nin + S->nouter + 1));
        for (int i = 0; i < S->nouter; i++) {
            const char *name = S->g->tensors[S->outer[i]].name;
            int t = name_find(L, name);
            if (t < 0 && outer_value(L, name)) t = name_find(L, name);
            VCC_ASSERT(t >= 0);
            n->in[n->nin++] = t;
        }
        n->sub[s] = sub;
    }
}

/* "2 inputs", "1 to 3 inputs", "at least 1 input" (hi INT32_MAX: variadic) into buf. */
static void count_range(char *buf, size_t size, int lo, int hi, const char *what) {
    if (hi == INT32_MAX) snprintf(buf, size, "at least %d %s%s", lo, what, lo == 1 ? "" : "s");
    else if (lo == hi) snprintf(buf, size, "%d %s%s", lo, what, lo == 1 ? "" : "s");
    else snprintf(buf, size, "%d to %d %ss", lo, hi, what);
}

/* Stage 3: one IR node per ONNX node. A node of an op vcc does not have (or of another domain) becomes
 * a VCC_OP_UNSUPPORTED node with its inputs, outputs and attributes, so that passes/support.c can
 * report every problem of the model at once. */
static void load_nodes(Loader *L, const Onnx__GraphProto *gp, char **labels, const bool *skip) {
    for (size_t i = 0; i < gp->n_node; i++) {
        if (skip[i]) continue;
        const Onnx__NodeProto *np = gp->node[i];
        const char *op = str_or_empty(np->op_type);
        VccOp vop = is_default_domain(np->domain) ? vcc_op_from_onnx(op) : VCC_OP_COUNT;
        if (vop == VCC_OP_COUNT) vop = VCC_OP_UNSUPPORTED;
        if (np->n_input > INT_MAX || np->n_output > INT_MAX) {
            fail(L, VCC_ERR_UNSUPPORTED, "node '%s' (%s): too many inputs or outputs", labels[i], op);
            continue;
        }
        int nin = (int)np->n_input, nout = (int)np->n_output, lo_in, hi_in, lo_out, hi_out;
        if (vop != VCC_OP_UNSUPPORTED && vcc_onnx_arity(vop, &lo_in, &hi_in, &lo_out, &hi_out) &&
            (nin < lo_in || nin > hi_in || nout < lo_out || nout > hi_out)) {
            /* the ONNX checker's arity rule: a node listing more inputs than its op has would otherwise
             * compile with the extra ones ignored */
            char has_in[48], has_out[48];
            count_range(has_in, sizeof has_in, lo_in, hi_in, "input");
            count_range(has_out, sizeof has_out, lo_out, hi_out, "output");
            fail(L, VCC_ERR_PARSE, "node '%s' (%s): it lists %d input%s and %d output%s; ONNX %s has %s and %s",
                 labels[i], op, nin, nin == 1 ? "" : "s", nout, nout == 1 ? "" : "s", op, has_in, has_out);
            continue;
        }
        int *in = vcc_malloc(sizeof(int) * (size_t)(nin + nout + 1)), *out = in + nin;
        bool ok = true;
        for (int k = 0; k < nin; k++) {
            const char *tn = str_or_empty(np->input[k]);
            in[k] = *tn ? name_find(L, tn) : -1;
            if (*tn && in[k] < 0 && outer_value(L, tn)) in[k] = name_find(L, tn);
            if (*tn && in[k] < 0) {
                fail(L, VCC_ERR_PARSE, "node '%s' (%s): input '%s' is not defined", labels[i], op, tn);
                ok = false;
            }
        }
        for (int k = 0; k < nout; k++) {
            const char *tn = str_or_empty(np->output[k]);
            out[k] = *tn ? name_find(L, tn) : -1; /* defined in stage 2, which found no duplicate */
        }
        if (ok) {
            int id = vcc_node_add(L->g, vop, labels[i], in, nin, out, nout, VCC_PHASE_FORWARD);
            VccNode *n = &L->g->nodes[id];
            n->onnx_op = vcc_strdup(op);
            if (!is_default_domain(np->domain)) n->domain = vcc_strdup(np->domain);
            copy_attributes(L, n, np, labels[i], vop == VCC_OP_UNSUPPORTED);
            if (vop == VCC_OP_UNSUPPORTED && is_default_domain(np->domain)) load_subgraphs(L, id, np, labels[i]);
        }
        free(in);
    }
}

static void add_unsupported_value(Loader *L, const char *name, VccTensorKind kind, const char *what,
                                  const char *dtype) {
    VccShape unknown = {.rank = 0};
    for (int d = 0; d < VCC_MAX_RANK; d++) unknown.dims[d] = -1;
    int t = add_tensor(L, name, VCC_DT_UNDEF, &unknown, kind);
    if (kind == VCC_T_INPUT) {
        L->g->inputs = vcc_realloc(L->g->inputs, sizeof(int) * (size_t)(L->g->ninputs + 1));
        L->g->inputs[L->g->ninputs++] = t;
    }
    if (L->nunsup == L->cap_unsup) {
        L->cap_unsup = L->cap_unsup ? 2 * L->cap_unsup : 8;
        L->unsup = vcc_realloc(L->unsup, sizeof *L->unsup * L->cap_unsup);
    }
    L->unsup[L->nunsup++] = (struct Unsup){t, vcc_strdup(what), vcc_strdup(dtype)};
}

/* One problem per value of an unsupported element type, naming up to two nodes that read it (the op
 * that needs the value is what a user looks for). */
static void record_unsupported_types(Loader *L, const Onnx__GraphProto *gp, char **labels) {
    if (!L->nunsup) return;
    int *slot = vcc_malloc(sizeof(int) * (size_t)L->g->ntensors);
    for (int t = 0; t < L->g->ntensors; t++) slot[t] = -1;
    for (size_t u = 0; u < L->nunsup; u++) slot[L->unsup[u].t] = (int)u;
    char *(*readers)[2] = vcc_calloc(L->nunsup, sizeof *readers);
    int *nreaders = vcc_calloc(L->nunsup, sizeof(int));
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        for (size_t k = 0; k < np->n_input; k++) {
            int t = np->input[k] && *np->input[k] ? name_find(L, np->input[k]) : -1;
            int u = t >= 0 ? slot[t] : -1;
            if (u < 0) continue;
            if (nreaders[u] < 2) {
                char b[48];
                readers[u][nreaders[u]] =
                    vcc_strfmt("%s '%s'", str_or_empty(np->op_type), vcc_short_name(labels[i], b, sizeof b));
            }
            nreaders[u]++;
        }
    }
    for (size_t u = 0; u < L->nunsup; u++) {
        const struct Unsup *x = &L->unsup[u];
        if (!nreaders[u])
            vcc_unsupported(L->ctx, VCC_PROB_DTYPE, x->dtype, "%s", x->what);
        else
            vcc_unsupported(L->ctx, VCC_PROB_DTYPE, x->dtype, "%s (read by %s%s%s%s)", x->what, readers[u][0],
                            nreaders[u] > 1 ? ", " : "", nreaders[u] > 1 ? readers[u][1] : "",
                            nreaders[u] > 2 ? ", ..." : "");
        free(readers[u][0]);
        free(readers[u][1]);
    }
    free(readers);
    free(nreaders);
    free(slot);
}

static void load_outputs(Loader *L, const Onnx__GraphProto *gp) {
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *name = str_or_empty(gp->output[i]->name);
        int t = *name ? name_find(L, name) : -1;
        if (t < 0) {
            if (*name)
                fail(L, VCC_ERR_PARSE, "graph output '%s' is not defined", name);
            else
                fail(L, VCC_ERR_PARSE, "graph output %zu has no name", i);
            continue;
        }
        L->g->outputs = vcc_realloc(L->g->outputs, sizeof(int) * (size_t)(L->g->noutputs + 1));
        L->g->output_elem_type = vcc_realloc(L->g->output_elem_type, sizeof(int) * (size_t)(L->g->noutputs + 1));
        L->g->output_decl = vcc_realloc(L->g->output_decl, sizeof(VccShape) * (size_t)(L->g->noutputs + 1));
        /* the declared type, checked against the computed one by passes/shape */
        const Onnx__TypeProto *tp = gp->output[i]->type;
        const Onnx__TypeProto__Tensor *tt =
            tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ? tp->tensor_type : NULL;
        VccShape decl = {.rank = -1};
        if (tt && tt->shape && tt->shape->n_dim <= VCC_MAX_RANK) {
            decl.rank = (int)tt->shape->n_dim;
            for (int d = 0; d < decl.rank; d++) {
                const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
                decl.dims[d] = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ? dim->dim_value : -1;
            }
        }
        L->g->output_elem_type[L->g->noutputs] = tt && tt->has_elem_type ? tt->elem_type : 0;
        L->g->output_decl[L->g->noutputs] = decl;
        L->g->outputs[L->g->noutputs++] = t;
    }
    if (gp->n_output == 0) fail(L, VCC_ERR_PARSE, "the graph has no outputs: there is nothing to compute");
}

/* ======================================================================== vcc_onnx_load */

/* labels[i]: node i's name, or "<op>_<i>" when it has none. */
static void node_labels(Loader *L, const Onnx__GraphProto *gp, char **labels) {
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        if (np->name && *np->name) {
            labels[i] = vcc_strdup(np->name);
        } else {
            size_t len = strlen(str_or_empty(np->op_type)) + 32;
            labels[i] = vcc_malloc(len);
            snprintf(labels[i], len, "%s_%zu", str_or_empty(np->op_type), i);
        }
        if (!np->op_type || !*np->op_type) fail(L, VCC_ERR_PARSE, "node '%s' has no op_type", labels[i]);
    }
}

static VccStatus load_graph(Loader *L, const Onnx__ModelProto *m) {
    if (!m->has_ir_version || m->ir_version <= 0) {
        fail(L, VCC_ERR_PARSE, "not an ONNX model: ir_version is %s", m->has_ir_version ? "not positive" : "missing");
        return L->status;
    }
    if (!m->graph) {
        fail(L, VCC_ERR_PARSE, "not an ONNX model: it has no graph");
        return L->status;
    }
    int64_t opset = 0;
    for (size_t i = 0; i < m->n_opset_import; i++)
        if (is_default_domain(m->opset_import[i]->domain) && m->opset_import[i]->has_version) {
            opset = m->opset_import[i]->version;
            break;
        }
    if (opset <= 0) {
        fail(L, VCC_ERR_UNSUPPORTED, "the model imports no ai.onnx opset version");
        return L->status;
    }
    L->g->opset = opset;
    L->g->ir_version = m->ir_version;
    if (m->producer_name && *m->producer_name) L->g->producer = vcc_strdup(m->producer_name);
    const Onnx__GraphProto *gp = m->graph;
    if (m->n_metadata_props > 0 && m->n_metadata_props < INT_MAX) {
        L->g->meta_keys = vcc_calloc(m->n_metadata_props, sizeof(char *));
        L->g->meta_values = vcc_calloc(m->n_metadata_props, sizeof(char *));
        for (size_t i = 0; i < m->n_metadata_props; i++) { /* entries holding a NUL byte are left out */
            const Onnx__StringStringEntryProto *e = m->metadata_props[i];
            char *k = entry_string(&e->key, e->has_key), *v = entry_string(&e->value, e->has_value);
            if (k && v) {
                L->g->meta_keys[L->g->nmeta] = k;
                L->g->meta_values[L->g->nmeta++] = v;
            } else {
                free(k);
                free(v);
            }
        }
    }

    /* stage 2: definitions */
    load_initializers(L, gp);
    /* a binding that names no input or symbolic dim first: the symbolic dims it leaves unbound are then
     * not reported (it was most likely meant for one of them) */
    report_unknown_bindings(L, gp);
    for (size_t i = 0; i < gp->n_input; i++) load_input(L, gp->input[i], i);
    if (!L->binding_unknown) report_unknown_bindings(L, NULL);
    char **labels = vcc_calloc(gp->n_node + 1, sizeof *labels);
    bool *skip = vcc_calloc(gp->n_node + 1, sizeof *skip);
    node_labels(L, gp, labels);
    if (L->status == VCC_OK) define_node_outputs(L, gp, labels, skip);

    /* stages 3 and 4 */
    if (L->status == VCC_OK) load_nodes(L, gp, labels, skip);
    if (L->status == VCC_OK) load_outputs(L, gp);

    if (L->status == VCC_OK) record_unsupported_types(L, gp, labels);

    for (size_t i = 0; i < gp->n_node; i++) free(labels[i]);
    free(labels);
    free(skip);
    return L->status;
}

VccStatus vcc_onnx_load(VccCtx *ctx, const char *path, VccGraph **out) {
    *out = NULL;
    const char *saved_file = ctx->file;
    if (!ctx->file) ctx->file = path;
    Loader L = {.ctx = ctx, .path = path, .status = VCC_OK};

    unsigned char *buf;
    size_t len;
    if (read_model_file(&L, &buf, &len) != VCC_OK) {
        ctx->file = saved_file;
        return L.status;
    }
    if (wire_too_deep(buf, buf + len, WIRE_MODEL, VCC_ONNX_MAX_GRAPH_DEPTH + 1)) {
        free(buf);
        fail(&L, VCC_ERR_UNSUPPORTED, "subgraphs nested more than %d deep (If, Loop or Scan bodies within each other)",
             VCC_ONNX_MAX_GRAPH_DEPTH);
        ctx->file = saved_file;
        return L.status;
    }
    /* protobuf-c copies everything it keeps, so the file buffer can go right away */
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
    free(buf);
    if (!m) {
        fail(&L, VCC_ERR_PARSE, "not a valid ONNX model (protobuf parse failed)");
        ctx->file = saved_file;
        return L.status;
    }

    const char *slash = strrchr(path, '/');
    if (slash) {
        size_t n = (size_t)(slash - path);
        L.dir = vcc_malloc(n + 2);
        memcpy(L.dir, path, n ? n : 1); /* "/model.onnx" -> "/" */
        L.dir[n ? n : 1] = 0;
    } else {
        L.dir = vcc_strdup(".");
    }
    L.binding_used = vcc_calloc((size_t)(ctx->nshapes > 0 ? ctx->nshapes : 1), sizeof(bool));
    L.g = vcc_graph_new();

    VccStatus st = load_graph(&L, m);

    onnx__model_proto__free_unpacked(m, NULL);
    free(L.dir);
    free(L.dir_real);
    free(L.names.slot);
    free(L.binding_used);
    for (size_t u = 0; u < L.nunsup; u++) {
        free(L.unsup[u].what);
        free(L.unsup[u].dtype);
    }
    free(L.unsup);
    if (st == VCC_OK) {
        *out = L.g;
    } else {
        vcc_report_problems(ctx); /* what was found besides the errors that ended the load */
        vcc_graph_free(L.g);
    }
    ctx->file = saved_file;
    return st;
}
