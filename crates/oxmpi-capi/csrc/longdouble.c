/* The reduction kernels of the C `long double` types (MPI_LONG_DOUBLE,
 * MPI_C_LONG_DOUBLE_COMPLEX, MPI_LONG_DOUBLE_INT), compiled by the C compiler of the platform
 * so that they compute exactly what a C program does with `long double` (x87 80-bit extended
 * on x86-64, IEEE quad on aarch64), which Rust cannot express. `b[i] = a[i] op b[i]`. */
#include <stddef.h>

typedef struct {
    long double value;
    int index;
} ld_int;

/* kind: 0 long double, 1 complex long double, 2 long double/int pair.
 * op: 0 SUM, 1 PROD, 2 MIN, 3 MAX, 4 MINLOC, 5 MAXLOC. */
void oxmpi_long_double_reduce(int kind, int op, const void *a, void *b, size_t n) {
    if (kind == 0) {
        const long double *x = a;
        long double *y = b;
        for (size_t i = 0; i < n; i++) {
            switch (op) {
            case 0: y[i] = x[i] + y[i]; break;
            case 1: y[i] = x[i] * y[i]; break;
            /* A NaN operand loses against a number, as Rust's f64::min/max. */
            case 2: if (x[i] < y[i] || y[i] != y[i]) y[i] = x[i]; break;
            case 3: if (x[i] > y[i] || y[i] != y[i]) y[i] = x[i]; break;
            }
        }
    } else if (kind == 1) {
        const _Complex long double *x = a;
        _Complex long double *y = b;
        for (size_t i = 0; i < n; i++) {
            if (op == 0) y[i] = x[i] + y[i];
            else if (op == 1) y[i] = x[i] * y[i];
        }
    } else {
        const ld_int *x = a;
        ld_int *y = b;
        for (size_t i = 0; i < n; i++) {
            int take = op == 4 ? x[i].value < y[i].value : x[i].value > y[i].value;
            if (take || (x[i].value == y[i].value && x[i].index < y[i].index)) y[i] = x[i];
        }
    }
}
