/* safetensors.h — read and write the safetensors format (Hugging Face).
 *
 * A file is: 8 bytes N (little-endian u64), N bytes of UTF-8 JSON, then the data.
 * The JSON maps each tensor name to {"dtype": "F32", "shape": [r, c],
 * "data_offsets": [begin, end]} (byte offsets into the data), plus an optional
 * "__metadata__" object of strings.
 *
 * The reader validates as the format's own reader does, before anything is used:
 * file ≥ 8 bytes; N ≤ 100 MB and 8 + N ≤ file size; the header is valid UTF-8
 * JSON, an object, without duplicate names (jansson, JSON_REJECT_DUPLICATES);
 * every dtype is known; shape × dtype size equals end − begin (overflow checked);
 * sorted by offset, the tensors tile the data exactly: no gap, no overlap, and the
 * last one ends at the end of the file. Only F32, F16 and BF16 convert to float.
 *
 * Every error message is "<file>: <tensor or header>: <problem>", ready for
 * "kvscope: " in front. The library never prints.
 */
#ifndef KVSCOPE_SAFETENSORS_H
#define KVSCOPE_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#define ST_MAX_HEADER 100000000u /* bytes; the reference reader's bound */
#define ST_MAX_DIMS 8

typedef enum {
    ST_BOOL, ST_U8, ST_I8, ST_F8_E5M2, ST_F8_E4M3, ST_I16, ST_U16, ST_F16, ST_BF16,
    ST_I32, ST_U32, ST_F32, ST_F64, ST_I64, ST_U64
} StDtype;

typedef struct {
    char *name;
    StDtype dtype;
    int ndim;
    size_t shape[ST_MAX_DIMS];
    size_t numel;
    size_t begin, end;   /* byte offsets into the data section */
} StTensor;

typedef struct {
    const char *path;           /* for messages (not owned) */
    const unsigned char *data;  /* the data section (points into map or the caller's buffer) */
    size_t data_size;
    StTensor *t;                /* (n) in file offset order */
    size_t n;
    void *map;                  /* the mmap'ed file, or NULL */
    size_t map_size;
} SafeTensors;

/* Results: 0 ok; ST_BAD the input is invalid (message in err); ST_NOMEM; ST_IO
 * (cannot open / map / write, message in err). */
enum { ST_BAD = -1, ST_NOMEM = -2, ST_IO = -3 };

/* Validate buf (size bytes, the whole file) and index its tensors. Tensors point
 * into buf, which must outlive st. path only names the file in messages. */
int st_parse(SafeTensors *st, const char *path, const unsigned char *buf, size_t size,
             char *err, size_t errsize);
/* Memory-map path read-only (a regular file only: infile_open) and st_parse it. */
int st_open(SafeTensors *st, const char *path, char *err, size_t errsize);
/* Unmap and free; st may be zeroed or half-built. */
void st_close(SafeTensors *st);

/* The tensor named name, or NULL. */
const StTensor *st_find(const SafeTensors *st, const char *name);
const char *st_dtype_name(StDtype d);
size_t st_dtype_size(StDtype d);

/* Convert a tensor's little-endian F32/F16/BF16 data to float32 in out (numel
 * floats). 0, or ST_BAD naming the tensor when its dtype is not one of those. */
int st_read_f32(const SafeTensors *st, const StTensor *t, float *out, char *err, size_t errsize);

/* One tensor to write: F32, data in host order. */
typedef struct {
    const char *name;
    int ndim;
    size_t shape[ST_MAX_DIMS];
    const float *data;
} StWrite;

/* Write n F32 tensors to path in the given order, with __metadata__ {"format":"pt"}.
 * The header is padded with spaces to a multiple of 8 bytes so the data stays
 * aligned. Writes path directly (callers write into a temporary folder).
 * 0, ST_NOMEM or ST_IO with a message. */
int st_write(const char *path, const StWrite *t, size_t n, char *err, size_t errsize);
/* As st_write, with tensor i stored as dtype[i]: ST_F32, or ST_I32 when t[i].data points
 * at int32_t values (token ids; read as bytes, never as floats). dtype NULL: all F32. */
int st_write_typed(const char *path, const StWrite *t, const StDtype *dtype, size_t n, char *err,
                   size_t errsize);

#endif
