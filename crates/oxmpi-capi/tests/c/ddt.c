/* Derived datatypes through the C ABI: every constructor's size, extent, envelope and
 * contents against hand-computed answers; pack/unpack and external32 against known bytes;
 * point-to-point with vector, indexed, struct and subarray types (blocking, nonblocking,
 * persistent) with every byte checked and gap bytes untouched; a type freed while an
 * operation is pending; bad inputs with their error classes. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "check.h"

static int rank, size;

static void extent_is(MPI_Datatype t, MPI_Count sz, MPI_Aint lb, MPI_Aint ext, const char *what) {
    int s;
    MPI_Count sc;
    MPI_Aint l, e;
    MUST(MPI_Type_size(t, &s));
    MUST(MPI_Type_size_c(t, &sc));
    MUST(MPI_Type_get_extent(t, &l, &e));
    CHECK(s == sz && sc == sz, "%s: size %d, want %lld", what, s, (long long)sz);
    CHECK(l == lb && e == ext, "%s: lb %ld extent %ld, want %ld %ld", what, (long)l, (long)e,
          (long)lb, (long)ext);
}

static void envelope_is(MPI_Datatype t, int ni, int na, int nd, int comb, const char *what) {
    int i, a, d, c;
    MUST(MPI_Type_get_envelope(t, &i, &a, &d, &c));
    CHECK(i == ni && a == na && d == nd && c == comb, "%s: envelope %d %d %d %d, want %d %d %d %d",
          what, i, a, d, c, ni, na, nd, comb);
}

static int deletes;
static int count_delete(MPI_Datatype t, int k, void *v, void *extra) {
    (void)t; (void)k; (void)v; (void)extra;
    deletes++;
    return MPI_SUCCESS;
}

static void constructors(void) {
    MPI_Datatype t, u, got[2];
    int ints[16];
    MPI_Aint addrs[4];

    MUST(MPI_Type_contiguous(5, MPI_INT, &t));
    extent_is(t, 20, 0, 20, "contiguous");
    envelope_is(t, 1, 0, 1, MPI_COMBINER_CONTIGUOUS, "contiguous");
    MUST(MPI_Type_free(&t));
    CHECK(t == MPI_DATATYPE_NULL, "free sets MPI_DATATYPE_NULL");

    MUST(MPI_Type_vector(3, 2, 4, MPI_DOUBLE, &t));
    extent_is(t, 48, 0, 80, "vector");
    envelope_is(t, 3, 0, 1, MPI_COMBINER_VECTOR, "vector");
    MUST(MPI_Type_get_contents(t, 3, 0, 1, ints, addrs, got));
    CHECK(ints[0] == 3 && ints[1] == 2 && ints[2] == 4 && got[0] == MPI_DOUBLE, "vector contents");
    MUST(MPI_Type_dup(t, &u));
    envelope_is(u, 0, 0, 1, MPI_COMBINER_DUP, "dup");
    extent_is(u, 48, 0, 80, "dup");
    MUST(MPI_Type_free(&u));
    MUST(MPI_Type_free(&t));

    MUST(MPI_Type_create_hvector(2, 1, 24, MPI_INT, &t));
    extent_is(t, 8, 0, 28, "hvector");
    envelope_is(t, 2, 1, 1, MPI_COMBINER_HVECTOR, "hvector");
    MUST(MPI_Type_get_contents(t, 2, 1, 1, ints, addrs, got));
    CHECK(ints[0] == 2 && ints[1] == 1 && addrs[0] == 24 && got[0] == MPI_INT, "hvector contents");
    MUST(MPI_Type_free(&t));

    {
        int bl[2] = {1, 2}, d[2] = {4, 0};
        MUST(MPI_Type_indexed(2, bl, d, MPI_INT, &t));
        extent_is(t, 12, 0, 20, "indexed");
        envelope_is(t, 5, 0, 1, MPI_COMBINER_INDEXED, "indexed");
        MUST(MPI_Type_get_contents(t, 5, 0, 1, ints, addrs, got));
        CHECK(ints[0] == 2 && ints[1] == 1 && ints[2] == 2 && ints[3] == 4 && ints[4] == 0,
              "indexed contents");
        MUST(MPI_Type_free(&t));
    }
    {
        int bl[2] = {2, 1};
        MPI_Aint d[2] = {0, 32};
        MUST(MPI_Type_create_hindexed(2, bl, d, MPI_DOUBLE, &t));
        extent_is(t, 24, 0, 40, "hindexed");
        envelope_is(t, 3, 2, 1, MPI_COMBINER_HINDEXED, "hindexed");
        MUST(MPI_Type_free(&t));
    }
    {
        int d[3] = {0, 5, 10};
        MUST(MPI_Type_create_indexed_block(3, 2, d, MPI_SHORT, &t));
        extent_is(t, 12, 0, 24, "indexed_block");
        envelope_is(t, 5, 0, 1, MPI_COMBINER_INDEXED_BLOCK, "indexed_block");
        MUST(MPI_Type_free(&t));
    }
    {
        MPI_Aint d[2] = {8, 0};
        MUST(MPI_Type_create_hindexed_block(2, 1, d, MPI_DOUBLE, &t));
        extent_is(t, 16, 0, 16, "hindexed_block");
        envelope_is(t, 2, 2, 1, MPI_COMBINER_HINDEXED_BLOCK, "hindexed_block");
        MUST(MPI_Type_free(&t));
    }
    {
        int bl[2] = {1, 1};
        MPI_Aint d[2] = {0, 8};
        MPI_Datatype ts[2] = {MPI_CHAR, MPI_DOUBLE};
        MPI_Aint tlb, text;
        MUST(MPI_Type_create_struct(2, bl, d, ts, &t));
        extent_is(t, 9, 0, 16, "struct");
        MUST(MPI_Type_get_true_extent(t, &tlb, &text));
        CHECK(tlb == 0 && text == 16, "struct true extent %ld %ld", (long)tlb, (long)text);
        envelope_is(t, 3, 2, 2, MPI_COMBINER_STRUCT, "struct");
        MUST(MPI_Type_get_contents(t, 3, 2, 2, ints, addrs, got));
        CHECK(got[0] == MPI_CHAR && got[1] == MPI_DOUBLE && addrs[1] == 8, "struct contents");
        MUST(MPI_Type_free(&t));
    }
    {
        int sizes[2] = {4, 6}, subs[2] = {2, 3}, starts[2] = {1, 2};
        MPI_Aint tlb, text;
        MUST(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &t));
        extent_is(t, 24, 0, 96, "subarray");
        MUST(MPI_Type_get_true_extent(t, &tlb, &text));
        CHECK(tlb == 32 && text == 36, "subarray true extent %ld %ld", (long)tlb, (long)text);
        envelope_is(t, 8, 0, 1, MPI_COMBINER_SUBARRAY, "subarray");
        MUST(MPI_Type_free(&t));
    }
    {
        int g[1] = {8}, dist[1] = {MPI_DISTRIBUTE_BLOCK}, darg[1] = {MPI_DISTRIBUTE_DFLT_DARG},
            ps[1] = {4};
        MPI_Aint tlb, text;
        MUST(MPI_Type_create_darray(4, 1, 1, g, dist, darg, ps, MPI_ORDER_C, MPI_INT, &t));
        extent_is(t, 8, 0, 32, "darray");
        MUST(MPI_Type_get_true_extent(t, &tlb, &text));
        CHECK(tlb == 8 && text == 8, "darray true extent %ld %ld", (long)tlb, (long)text);
        envelope_is(t, 4 * 1 + 4, 0, 1, MPI_COMBINER_DARRAY, "darray");
        MUST(MPI_Type_free(&t));
    }
    MUST(MPI_Type_create_resized(MPI_INT, -4, 16, &t));
    extent_is(t, 4, -4, 16, "resized");
    envelope_is(t, 0, 2, 1, MPI_COMBINER_RESIZED, "resized");
    {
        MPI_Count lb, ext;
        MUST(MPI_Type_get_extent_x(t, &lb, &ext));
        CHECK(lb == -4 && ext == 16, "extent_x");
    }
    MUST(MPI_Type_free(&t));

    MUST(MPI_Type_vector_c(2, 1, 3, MPI_INT, &t));
    extent_is(t, 8, 0, 16, "vector_c");
    {
        MPI_Count ni, na, nc, nd;
        int comb;
        MUST(MPI_Type_get_envelope_c(t, &ni, &na, &nc, &nd, &comb));
        CHECK(comb == MPI_COMBINER_VECTOR && nc == 3 && nd == 1, "vector_c envelope %lld %lld",
              (long long)ni, (long long)nc);
    }
    MUST(MPI_Type_free(&t));

    /* names */
    {
        char name[MPI_MAX_OBJECT_NAME];
        int len;
        MUST(MPI_Type_get_name(MPI_DOUBLE, name, &len));
        CHECK(strcmp(name, "MPI_DOUBLE") == 0 && len == 10, "predefined name %s", name);
        MUST(MPI_Type_contiguous(2, MPI_INT, &t));
        MUST(MPI_Type_get_name(t, name, &len));
        CHECK(len == 0, "unnamed type");
        MUST(MPI_Type_set_name(t, "pair"));
        MUST(MPI_Type_get_name(t, name, &len));
        CHECK(strcmp(name, "pair") == 0 && len == 4, "set name %s", name);
        MUST(MPI_Type_free(&t));
    }
    /* match_size and f90 */
    {
        int s;
        MUST(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &t));
        MUST(MPI_Type_size(t, &s));
        CHECK(s == 8, "match_size real 8");
        MUST(MPI_Type_create_f90_integer(9, &t));
        MUST(MPI_Type_size(t, &s));
        CHECK(s == 4, "f90 integer r=9 has %d bytes", s);
        MUST(MPI_Type_create_f90_real(15, 300, &t));
        MUST(MPI_Type_size(t, &s));
        CHECK(s == 8, "f90 real p=15 has %d bytes", s);
    }
    /* keyvals and attributes: copied on dup, deleted on free */
    {
        int k, flag;
        void *v;
        MUST(MPI_Type_create_keyval(MPI_TYPE_DUP_FN, count_delete, &k, NULL));
        MUST(MPI_Type_contiguous(3, MPI_INT, &t));
        MUST(MPI_Type_set_attr(t, k, (void *)(intptr_t)42));
        MUST(MPI_Type_dup(t, &u));
        MUST(MPI_Type_get_attr(u, k, &v, &flag));
        CHECK(flag == 1 && (intptr_t)v == 42, "attribute copied on dup");
        MUST(MPI_Type_free(&u));
        CHECK(deletes == 1, "delete callback on free: %d", deletes);
        MUST(MPI_Type_delete_attr(t, k));
        CHECK(deletes == 2, "delete callback on delete_attr: %d", deletes);
        MUST(MPI_Type_get_attr(t, k, &v, &flag));
        CHECK(flag == 0, "deleted attribute");
        MUST(MPI_Type_free(&t));
        MUST(MPI_Type_free_keyval(&k));
        CHECK(k == MPI_KEYVAL_INVALID, "free_keyval");
    }
    /* addresses */
    {
        double a[4];
        MPI_Aint p0, p2;
        MUST(MPI_Get_address(&a[0], &p0));
        MUST(MPI_Get_address(&a[2], &p2));
        CHECK(MPI_Aint_diff(p2, p0) == 16 && MPI_Aint_add(p0, 16) == p2, "address arithmetic");
    }
}

static void packing(void) {
    double a[12], b[12], packed[6];
    unsigned char buf[64];
    MPI_Datatype v;
    int pos = 0, sz, i;
    for (i = 0; i < 12; i++) a[i] = i;
    MUST(MPI_Type_vector(3, 2, 4, MPI_DOUBLE, &v));
    MUST(MPI_Type_commit(&v));
    MUST(MPI_Pack_size(1, v, MPI_COMM_WORLD, &sz));
    CHECK(sz == 48, "pack_size %d", sz);
    MUST(MPI_Pack(a, 1, v, buf, sizeof buf, &pos, MPI_COMM_WORLD));
    CHECK(pos == 48, "pack position %d", pos);
    memcpy(packed, buf, 48);
    CHECK(packed[0] == 0 && packed[1] == 1 && packed[2] == 4 && packed[3] == 5 && packed[4] == 8 &&
              packed[5] == 9, "packed values");
    for (i = 0; i < 12; i++) b[i] = -1;
    pos = 0;
    MUST(MPI_Unpack(buf, 48, &pos, b, 1, v, MPI_COMM_WORLD));
    for (i = 0; i < 12; i++) {
        int in = i < 10 && (i % 4) < 2;
        CHECK(b[i] == (in ? (double)i : -1.0), "unpacked b[%d] = %g", i, b[i]);
    }
    /* packing into too small a buffer truncates */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    pos = 0;
    {
        int rc = MPI_Pack(a, 1, v, buf, 40, &pos, MPI_COMM_WORLD), cls;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE, "short pack buffer: class %d", cls);
    }
    MUST(MPI_Type_free(&v));

    /* the MINLOC/MAXLOC pair type of a value and an index type */
    {
        const MPI_Datatype val[9] = {MPI_FLOAT, MPI_DOUBLE, MPI_LONG, MPI_INT, MPI_SHORT,
                                     MPI_LONG_DOUBLE, MPI_REAL, MPI_DOUBLE_PRECISION,
                                     MPI_INTEGER};
        const MPI_Datatype idx[9] = {MPI_INT, MPI_INT, MPI_INT, MPI_INT, MPI_INT, MPI_INT,
                                     MPI_REAL, MPI_DOUBLE_PRECISION, MPI_INTEGER};
        const MPI_Datatype want[9] = {MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT, MPI_2INT,
                                      MPI_SHORT_INT, MPI_LONG_DOUBLE_INT, MPI_2REAL,
                                      MPI_2DOUBLE_PRECISION, MPI_2INTEGER};
        MPI_Datatype pair, dup;
        for (i = 0; i < 9; i++) {
            MUST(MPI_Type_get_value_index(val[i], idx[i], &pair));
            CHECK(pair == want[i], "value_index %d", i);
        }
        MUST(MPI_Type_get_value_index(MPI_DOUBLE, MPI_FLOAT, &pair));
        CHECK(pair == MPI_DATATYPE_NULL, "no pair of double and float");
        MUST(MPI_Type_dup(MPI_DOUBLE, &dup));
        MUST(MPI_Type_get_value_index(dup, MPI_INT, &pair));
        CHECK(pair == MPI_DATATYPE_NULL, "a duplicate is not predefined");
        MUST(MPI_Type_free(&dup));
        int cls, rc = MPI_Type_get_value_index(MPI_DATATYPE_NULL, MPI_INT, &pair);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TYPE, "value_index of MPI_DATATYPE_NULL: class %d", cls);
        rc = MPI_Type_get_value_index(MPI_INT, MPI_INT, NULL);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_ARG, "value_index into NULL: class %d", cls);
    }

    /* external32: big-endian, fixed sizes */
    {
        int x[2] = {0x01020304, -2};
        double d = 1.0;
        unsigned char e[16];
        const unsigned char want_i[8] = {1, 2, 3, 4, 0xff, 0xff, 0xff, 0xfe};
        const unsigned char want_d[8] = {0x3f, 0xf0, 0, 0, 0, 0, 0, 0};
        MPI_Aint p = 0, s;
        int y[2] = {0, 0};
        double d2 = 0;
        MUST(MPI_Pack_external_size("external32", 2, MPI_INT, &s));
        CHECK(s == 8, "external32 size %ld", (long)s);
        MUST(MPI_Pack_external("external32", x, 2, MPI_INT, e, sizeof e, &p));
        MUST(MPI_Pack_external("external32", &d, 1, MPI_DOUBLE, e, sizeof e, &p));
        CHECK(p == 16 && memcmp(e, want_i, 8) == 0 && memcmp(e + 8, want_d, 8) == 0,
              "external32 bytes");
        p = 0;
        MUST(MPI_Unpack_external("external32", e, 16, &p, y, 2, MPI_INT));
        MUST(MPI_Unpack_external("external32", e, 16, &p, &d2, 1, MPI_DOUBLE));
        CHECK(y[0] == x[0] && y[1] == x[1] && d2 == 1.0 && p == 16, "external32 round trip");
        {
            MPI_Count pc = 0, sc;
            short z = 0;
            const unsigned char want_s[2] = {0x12, 0x34};
            MUST(MPI_Pack_external_size_c("external32", 1, MPI_SHORT, &sc));
            CHECK(sc == 2, "external32 short size");
            z = 0x1234;
            MUST(MPI_Pack_external_c("external32", &z, 1, MPI_SHORT, e, 2, &pc));
            CHECK(pc == 2 && memcmp(e, want_s, 2) == 0, "external32 short bytes");
            z = 0;
            pc = 0;
            MUST(MPI_Unpack_external_c("external32", e, 2, &pc, &z, 1, MPI_SHORT));
            CHECK(z == 0x1234, "external32 short back");
        }
    }
}

struct S {
    char c;
    double d;
    int i;
};

static MPI_Datatype struct_type(void) {
    int bl[3] = {1, 1, 1};
    MPI_Aint d[3] = {offsetof(struct S, c), offsetof(struct S, d), offsetof(struct S, i)};
    MPI_Datatype ts[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT}, t;
    MUST(MPI_Type_create_struct(3, bl, d, ts, &t));
    MUST(MPI_Type_commit(&t));
    return t;
}

static void p2p(void) {
    int next = (rank + 1) % size, prev = (rank + size - 1) % size, i, n;
    MPI_Datatype vec, idx, st, sub;
    MPI_Status status;

    MUST(MPI_Type_vector(4, 1, 2, MPI_DOUBLE, &vec));
    MUST(MPI_Type_commit(&vec));

    /* a vector of 4 doubles received as 4 contiguous doubles, and back */
    {
        double a[8], b[4], c[8];
        for (i = 0; i < 8; i++) a[i] = 100 * rank + i;
        MUST(MPI_Sendrecv(a, 1, vec, next, 1, b, 4, MPI_DOUBLE, prev, 1, MPI_COMM_WORLD, &status));
        for (i = 0; i < 4; i++)
            CHECK(b[i] == 100 * prev + 2 * i, "vector as contiguous: b[%d] = %g", i, b[i]);
        MUST(MPI_Get_count(&status, MPI_DOUBLE, &n));
        CHECK(n == 4, "count %d", n);
        MUST(MPI_Get_count(&status, vec, &n));
        CHECK(n == 1, "count as vector %d", n);
        for (i = 0; i < 8; i++) c[i] = -1;
        MUST(MPI_Sendrecv(b, 4, MPI_DOUBLE, prev, 2, c, 1, vec, next, 2, MPI_COMM_WORLD, &status));
        for (i = 0; i < 8; i++)
            CHECK(c[i] == (i % 2 == 0 ? 100 * rank + i : -1), "contiguous as vector: c[%d] = %g",
                  i, c[i]);
    }

    /* blocking send/recv of indexed ints; gap bytes untouched */
    {
        int bl[3] = {2, 1, 3}, d[3] = {0, 4, 7}, a[10], b[10];
        MUST(MPI_Type_indexed(3, bl, d, MPI_INT, &idx));
        MUST(MPI_Type_commit(&idx));
        for (i = 0; i < 10; i++) {
            a[i] = 1000 * rank + i;
            b[i] = -7;
        }
        if (rank % 2 == 0) {
            MUST(MPI_Send(a, 1, idx, next, 3, MPI_COMM_WORLD));
            MUST(MPI_Recv(b, 1, idx, prev, 3, MPI_COMM_WORLD, &status));
        } else {
            MUST(MPI_Recv(b, 1, idx, prev, 3, MPI_COMM_WORLD, &status));
            MUST(MPI_Send(a, 1, idx, next, 3, MPI_COMM_WORLD));
        }
        for (i = 0; i < 10; i++) {
            int in = i < 2 || i == 4 || (i >= 7 && i < 10);
            CHECK(b[i] == (in ? 1000 * prev + i : -7), "indexed b[%d] = %d", i, b[i]);
        }
        MUST(MPI_Get_elements(&status, idx, &n));
        CHECK(n == 6, "elements %d", n);
    }

    /* nonblocking struct with padding: padding bytes never written */
    {
        struct S a[3], b[3];
        MPI_Request r[2];
        unsigned char *p;
        st = struct_type();
        memset(a, 0x11, sizeof a);
        memset(b, 0xAB, sizeof b);
        for (i = 0; i < 3; i++) {
            a[i].c = (char)('a' + rank + i);
            a[i].d = rank + i / 4.0;
            a[i].i = -rank - i;
        }
        MUST(MPI_Irecv(b, 3, st, prev, 4, MPI_COMM_WORLD, &r[0]));
        MUST(MPI_Isend(a, 3, st, next, 4, MPI_COMM_WORLD, &r[1]));
        MUST(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
        for (i = 0; i < 3; i++) {
            CHECK(b[i].c == (char)('a' + prev + i) && b[i].d == prev + i / 4.0 &&
                      b[i].i == -prev - i, "struct %d", i);
            p = (unsigned char *)&b[i];
            for (n = 1; n < (int)offsetof(struct S, d); n++)
                CHECK(p[n] == 0xAB, "padding byte %d of struct %d written", n, i);
            for (n = offsetof(struct S, i) + sizeof(int); n < (int)sizeof(struct S); n++)
                CHECK(p[n] == 0xAB, "tail padding byte %d of struct %d written", n, i);
        }
    }

    /* subarray, received with Irecv + Test loop */
    {
        int sizes[2] = {4, 6}, subs[2] = {2, 3}, starts[2] = {1, 2}, a[24], b[24], flag = 0;
        MPI_Request r;
        MUST(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &sub));
        MUST(MPI_Type_commit(&sub));
        for (i = 0; i < 24; i++) {
            a[i] = 50 * rank + i;
            b[i] = -3;
        }
        MUST(MPI_Irecv(b, 1, sub, prev, 5, MPI_COMM_WORLD, &r));
        MUST(MPI_Send(a, 1, sub, next, 5, MPI_COMM_WORLD));
        while (!flag) MUST(MPI_Test(&r, &flag, &status));
        for (i = 0; i < 24; i++) {
            int row = i / 6, col = i % 6, in = row >= 1 && row < 3 && col >= 2 && col < 5;
            CHECK(b[i] == (in ? 50 * prev + i : -3), "subarray b[%d] = %d", i, b[i]);
        }
    }

    /* a type freed while an isend and an irecv using it are pending */
    {
        MPI_Datatype tmp;
        double a[8], b[8];
        MPI_Request r[2];
        int idx2;
        MUST(MPI_Type_vector(4, 1, 2, MPI_DOUBLE, &tmp));
        MUST(MPI_Type_commit(&tmp));
        for (i = 0; i < 8; i++) {
            a[i] = rank * 10 + i;
            b[i] = -1;
        }
        MUST(MPI_Irecv(b, 1, tmp, prev, 6, MPI_COMM_WORLD, &r[0]));
        MUST(MPI_Isend(a, 1, tmp, next, 6, MPI_COMM_WORLD, &r[1]));
        MUST(MPI_Type_free(&tmp));
        for (i = 0; i < 8; i++) a[i] = -99; /* the send was packed when it started */
        MUST(MPI_Waitany(2, r, &idx2, MPI_STATUS_IGNORE));
        MUST(MPI_Waitany(2, r, &idx2, MPI_STATUS_IGNORE));
        for (i = 0; i < 8; i++)
            CHECK(b[i] == (i % 2 == 0 ? prev * 10 + i : -1), "freed type: b[%d] = %g", i, b[i]);
    }

    /* persistent requests repack and unpack at every start */
    {
        double a[8], b[8];
        MPI_Request r[2];
        int round;
        MUST(MPI_Recv_init(b, 1, vec, prev, 7, MPI_COMM_WORLD, &r[0]));
        MUST(MPI_Send_init(a, 1, vec, next, 7, MPI_COMM_WORLD, &r[1]));
        for (round = 0; round < 3; round++) {
            for (i = 0; i < 8; i++) {
                a[i] = round * 1000 + rank * 10 + i;
                b[i] = -1;
            }
            MUST(MPI_Startall(2, r));
            MUST(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
            for (i = 0; i < 8; i++)
                CHECK(b[i] == (i % 2 == 0 ? round * 1000 + prev * 10 + i : -1),
                      "persistent round %d: b[%d] = %g", round, i, b[i]);
        }
        MUST(MPI_Request_free(&r[0]));
        MUST(MPI_Request_free(&r[1]));
    }

    /* probe counts through the type */
    {
        double a[8] = {0}, b[8];
        MPI_Request r;
        MUST(MPI_Isend(a, 2, vec, next, 8, MPI_COMM_WORLD, &r));
        MUST(MPI_Probe(prev, 8, MPI_COMM_WORLD, &status));
        MUST(MPI_Get_count(&status, vec, &n));
        CHECK(n == 2, "probe count as vector %d", n);
        MUST(MPI_Get_elements(&status, vec, &n));
        CHECK(n == 8, "probe elements %d", n);
        {
            double big[16];
            MUST(MPI_Recv(big, 2, vec, prev, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
        MUST(MPI_Wait(&r, MPI_STATUS_IGNORE));
        (void)b;
    }

    /* sendrecv_replace through the vector: gaps untouched */
    {
        double a[8];
        for (i = 0; i < 8; i++) a[i] = i % 2 == 0 ? 20 * rank + i : -6;
        MUST(MPI_Sendrecv_replace(a, 1, vec, next, 11, prev, 11, MPI_COMM_WORLD, &status));
        for (i = 0; i < 8; i++)
            CHECK(a[i] == (i % 2 == 0 ? 20 * prev + i : -6), "sendrecv_replace a[%d] = %g", i,
                  a[i]);
    }

    /* MPI_BOTTOM with absolute addresses: an int and a double in separate variables */
    {
        int x = 7 * rank, y = -1;
        double u = rank + 0.25, w = -1;
        int bl[2] = {1, 1};
        MPI_Aint d[2];
        MPI_Datatype ts[2] = {MPI_INT, MPI_DOUBLE}, abs_send, abs_recv;
        MPI_Get_address(&x, &d[0]);
        MPI_Get_address(&u, &d[1]);
        MUST(MPI_Type_create_struct(2, bl, d, ts, &abs_send));
        MUST(MPI_Type_commit(&abs_send));
        MPI_Get_address(&y, &d[0]);
        MPI_Get_address(&w, &d[1]);
        MUST(MPI_Type_create_struct(2, bl, d, ts, &abs_recv));
        MUST(MPI_Type_commit(&abs_recv));
        MUST(MPI_Sendrecv(MPI_BOTTOM, 1, abs_send, next, 12, MPI_BOTTOM, 1, abs_recv, prev, 12,
                          MPI_COMM_WORLD, &status));
        CHECK(y == 7 * prev && w == prev + 0.25, "MPI_BOTTOM: %d %g", y, w);
        MUST(MPI_Type_free(&abs_send));
        MUST(MPI_Type_free(&abs_recv));
    }

    /* testsome over derived receives */
    {
        double a[8], b[8];
        MPI_Request r[2];
        int outcount, idx3[2], done = 0;
        for (i = 0; i < 8; i++) {
            a[i] = 5 * rank + i;
            b[i] = -1;
        }
        MUST(MPI_Irecv(b, 1, vec, prev, 13, MPI_COMM_WORLD, &r[0]));
        MUST(MPI_Isend(a, 1, vec, next, 13, MPI_COMM_WORLD, &r[1]));
        while (done < 2) {
            MUST(MPI_Testsome(2, r, &outcount, idx3, MPI_STATUSES_IGNORE));
            if (outcount != MPI_UNDEFINED) done += outcount;
        }
        for (i = 0; i < 8; i++)
            CHECK(b[i] == (i % 2 == 0 ? 5 * prev + i : -1), "testsome b[%d] = %g", i, b[i]);
    }

    /* matched probe, then a receive through the vector type */
    {
        double a[4], b[8];
        MPI_Message m;
        MPI_Request r;
        for (i = 0; i < 4; i++) a[i] = 3 * rank + i;
        for (i = 0; i < 8; i++) b[i] = -1;
        MUST(MPI_Isend(a, 4, MPI_DOUBLE, next, 10, MPI_COMM_WORLD, &r));
        MUST(MPI_Mprobe(prev, 10, MPI_COMM_WORLD, &m, &status));
        MUST(MPI_Mrecv(b, 1, vec, &m, &status));
        MUST(MPI_Wait(&r, MPI_STATUS_IGNORE));
        for (i = 0; i < 8; i++)
            CHECK(b[i] == (i % 2 == 0 ? 3 * prev + i / 2 : -1), "mrecv b[%d] = %g", i, b[i]);
    }

    /* truncation: 8 doubles into a vector of 4 */
    {
        double a[8] = {0}, b[8];
        int rc, cls;
        MPI_Request r;
        MUST(MPI_Isend(a, 8, MPI_DOUBLE, next, 9, MPI_COMM_WORLD, &r));
        rc = MPI_Recv(b, 1, vec, prev, 9, MPI_COMM_WORLD, &status);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE, "truncated receive: class %d", cls);
        MUST(MPI_Wait(&r, MPI_STATUS_IGNORE));
    }

    MUST(MPI_Type_free(&vec));
    MUST(MPI_Type_free(&idx));
    MUST(MPI_Type_free(&st));
    MUST(MPI_Type_free(&sub));
}


static void collectives(void) {
    MPI_Datatype vec, col;
    double a[8], b[8], *all;
    int i, r, root = size - 1;
    MUST(MPI_Type_vector(4, 1, 2, MPI_DOUBLE, &vec));
    MUST(MPI_Type_commit(&vec));

    /* bcast of a vector: gaps untouched */
    for (i = 0; i < 8; i++) a[i] = rank == root ? 7 + i : -1;
    MUST(MPI_Bcast(a, 1, vec, root, MPI_COMM_WORLD));
    for (i = 0; i < 8; i++)
        CHECK(a[i] == (i % 2 == 0 || rank == root ? 7 + i : -1), "bcast a[%d] = %g", i, a[i]);

    /* allreduce MPI_SUM over a vector of doubles */
    for (i = 0; i < 8; i++) {
        a[i] = rank + i;
        b[i] = -5;
    }
    MUST(MPI_Allreduce(a, b, 1, vec, MPI_SUM, MPI_COMM_WORLD));
    for (i = 0; i < 8; i++) {
        double want = i % 2 == 0 ? size * (size - 1) / 2.0 + size * i : -5;
        CHECK(b[i] == want, "allreduce b[%d] = %g, want %g", i, b[i], want);
    }
    /* in place */
    for (i = 0; i < 8; i++) a[i] = rank + i;
    MUST(MPI_Allreduce(MPI_IN_PLACE, a, 1, vec, MPI_MAX, MPI_COMM_WORLD));
    for (i = 0; i < 8; i++)
        CHECK(a[i] == (i % 2 == 0 ? size - 1 + i : rank + i), "allreduce in place a[%d]", i);
    /* reduce to a root */
    for (i = 0; i < 8; i++) {
        a[i] = 1;
        b[i] = -5;
    }
    MUST(MPI_Reduce(a, b, 1, vec, MPI_SUM, root, MPI_COMM_WORLD));
    if (rank == root)
        for (i = 0; i < 8; i++) CHECK(b[i] == (i % 2 == 0 ? size : -5), "reduce b[%d]", i);

    /* MINLOC over a vector of MPI_DOUBLE_INT pairs */
    {
        struct {
            double v;
            int i;
        } x[4], y[4];
        MPI_Datatype pv;
        MUST(MPI_Type_vector(2, 1, 2, MPI_DOUBLE_INT, &pv));
        MUST(MPI_Type_commit(&pv));
        for (i = 0; i < 4; i++) {
            x[i].v = -7;
            x[i].i = -7;
            y[i].v = 99;
            y[i].i = 99;
        }
        x[0].v = rank == 1 ? -1 : rank;
        x[0].i = rank;
        x[2].v = 10 - rank;
        x[2].i = rank;
        MUST(MPI_Allreduce(x, y, 1, pv, MPI_MINLOC, MPI_COMM_WORLD));
        CHECK(y[0].v == (size > 1 ? -1 : 0) && y[0].i == (size > 1 ? 1 : 0), "minloc 0: %g %d",
              y[0].v, y[0].i);
        CHECK(y[2].v == 10 - (size - 1) && y[2].i == size - 1, "minloc 2: %g %d", y[2].v, y[2].i);
        CHECK(y[1].v == 99 && y[1].i == 99 && y[3].v == 99 && y[3].i == 99, "minloc gaps");
        MUST(MPI_Type_free(&pv));
    }

    /* gather: each rank sends 2 contiguous doubles, the root receives them as columns of a
     * size x 2 matrix stored column-major (a resized vector) */
    all = malloc(sizeof(double) * 2 * size);
    MUST(MPI_Type_vector(2, 1, size, MPI_DOUBLE, &col));
    {
        MPI_Datatype colr;
        MUST(MPI_Type_create_resized(col, 0, sizeof(double), &colr));
        MUST(MPI_Type_free(&col));
        col = colr;
    }
    MUST(MPI_Type_commit(&col));
    a[0] = 10 * rank;
    a[1] = 10 * rank + 1;
    for (i = 0; i < 2 * size; i++) all[i] = -1;
    MUST(MPI_Gather(a, 2, MPI_DOUBLE, all, 1, col, root, MPI_COMM_WORLD));
    if (rank == root)
        for (r = 0; r < size; r++)
            CHECK(all[r] == 10 * r && all[size + r] == 10 * r + 1, "gather column %d", r);

    /* alltoall: send one strided double to each rank, receive contiguous */
    {
        double *s = malloc(sizeof(double) * 2 * size), *d = malloc(sizeof(double) * size);
        MPI_Datatype one;
        MUST(MPI_Type_create_resized(MPI_DOUBLE, 0, 2 * sizeof(double), &one));
        MUST(MPI_Type_commit(&one));
        for (i = 0; i < 2 * size; i++) s[i] = i % 2 == 0 ? 100 * rank + i / 2 : -9;
        MUST(MPI_Alltoall(s, 1, one, d, 1, MPI_DOUBLE, MPI_COMM_WORLD));
        for (r = 0; r < size; r++) CHECK(d[r] == 100 * r + rank, "alltoall from %d: %g", r, d[r]);
        /* the v forms: rank r sends r + 1 doubles, gathered into every other slot */
        {
            int total = size * (size + 1) / 2, *counts = malloc(sizeof(int) * size),
                *displs = malloc(sizeof(int) * size), *ones = malloc(sizeof(int) * size),
                *idx = malloc(sizeof(int) * size);
            double *mine = malloc(sizeof(double) * size), *g = malloc(sizeof(double) * 2 * total);
            for (r = 0; r < size; r++) {
                counts[r] = r + 1;
                displs[r] = r * (r + 1) / 2;
                ones[r] = 1;
                idx[r] = r;
            }
            for (i = 0; i <= rank; i++) mine[i] = 1000 * rank + i;
            for (i = 0; i < 2 * total; i++) g[i] = -4;
            MUST(MPI_Gatherv(mine, rank + 1, MPI_DOUBLE, g, counts, displs, one, root,
                             MPI_COMM_WORLD));
            if (rank == root)
                for (r = 0; r < size; r++)
                    for (i = 0; i <= r; i++) {
                        int at = 2 * (displs[r] + i);
                        CHECK(g[at] == 1000 * r + i && g[at + 1] == -4, "gatherv %d.%d", r, i);
                    }
            for (i = 0; i < 2 * total; i++) g[i] = -4;
            MUST(MPI_Allgatherv(mine, rank + 1, MPI_DOUBLE, g, counts, displs, one,
                                MPI_COMM_WORLD));
            for (r = 0; r < size; r++)
                for (i = 0; i <= r; i++)
                    CHECK(g[2 * (displs[r] + i)] == 1000 * r + i, "allgatherv %d.%d", r, i);
            for (i = 0; i < size; i++) d[i] = -1;
            MUST(MPI_Alltoallv(s, ones, idx, one, d, ones, idx, MPI_DOUBLE, MPI_COMM_WORLD));
            for (r = 0; r < size; r++) CHECK(d[r] == 100 * r + rank, "alltoallv from %d", r);
            for (i = 0; i < 2 * size; i++) s[i] = -2;
            MUST(MPI_Alltoallv(d, ones, idx, MPI_DOUBLE, s, ones, idx, one, MPI_COMM_WORLD));
            for (r = 0; r < size; r++)
                CHECK(s[2 * r] == 100 * rank + r && s[2 * r + 1] == -2, "alltoallv back %d", r);
            free(counts);
            free(displs);
            free(ones);
            free(idx);
            free(mine);
            free(g);
        }
        MUST(MPI_Type_free(&one));
        free(s);
        free(d);
    }
    free(all);
    MUST(MPI_Type_free(&col));
    MUST(MPI_Type_free(&vec));
}

static void expect(int rc, int want, const char *what) {
    int cls;
    MPI_Error_class(rc, &cls);
    CHECK(cls == want, "%s: class %d, want %d", what, cls, want);
}

static void bad_inputs(void) {
    MPI_Datatype t;
    double a[8] = {0};
    MPI_Request r;
    MUST(MPI_Type_vector(2, 1, 2, MPI_DOUBLE, &t));
    expect(MPI_Send(a, 1, t, rank, 0, MPI_COMM_WORLD), MPI_ERR_TYPE, "uncommitted send");
    expect(MPI_Irecv(a, 1, t, rank, 0, MPI_COMM_WORLD, &r), MPI_ERR_TYPE, "uncommitted irecv");
    expect(MPI_Send(a, 1, MPI_DATATYPE_NULL, rank, 0, MPI_COMM_WORLD), MPI_ERR_TYPE,
           "null datatype");
    expect(MPI_Type_commit(&t), MPI_SUCCESS, "commit");
    expect(MPI_Send(a, -1, t, rank, 0, MPI_COMM_WORLD), MPI_ERR_COUNT, "negative count");
    expect(MPI_Type_contiguous(-1, MPI_INT, &t), MPI_ERR_COUNT, "negative contiguous count");
    expect(MPI_Type_vector(2, 1, 2, MPI_DATATYPE_NULL, &t), MPI_ERR_TYPE, "null oldtype");
    expect(MPI_Type_contiguous(2, MPI_INT, NULL), MPI_ERR_ARG, "null newtype");
    {
        MPI_Datatype d = MPI_DOUBLE;
        expect(MPI_Type_free(&d), MPI_ERR_TYPE, "free of a predefined type");
    }
    /* a NULL buffer is MPI_BOTTOM: only valid with absolute addresses */
    expect(MPI_Send(NULL, 1, t, rank, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER, "NULL buffer, vector");
    {
        unsigned char out[64];
        int pos = 0;
        expect(MPI_Pack(NULL, 1, t, out, sizeof out, &pos, MPI_COMM_WORLD), MPI_ERR_BUFFER,
               "pack from NULL");
        expect(MPI_Pack(NULL, 1, MPI_INT, out, sizeof out, &pos, MPI_COMM_WORLD),
               MPI_ERR_BUFFER, "pack an int from NULL");
        pos = -1;
        expect(MPI_Pack(a, 1, t, out, sizeof out, &pos, MPI_COMM_WORLD), MPI_ERR_ARG,
               "negative position");
        pos = 0;
        expect(MPI_Pack(a, -1, t, out, sizeof out, &pos, MPI_COMM_WORLD), MPI_ERR_COUNT,
               "negative pack count");
        {
            MPI_Aint apos = 0;
            expect(MPI_Pack_external("native", a, 1, t, out, sizeof out, &apos), MPI_ERR_ARG,
                   "unknown data representation");
        }
    }
    expect(MPI_Type_free(&t), MPI_SUCCESS, "free");
    {
        int sz;
        expect(MPI_Type_size(t, &sz), MPI_ERR_TYPE, "freed type");
    }
}

int main(int argc, char **argv) {
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));
    constructors();
    packing();
    p2p();
    collectives();
    bad_inputs();
    MUST(MPI_Finalize());
    return 0;
}
