/* Reductions on the C long double types (MPI_LONG_DOUBLE, MPI_C_LONG_DOUBLE_COMPLEX,
 * MPI_LONG_DOUBLE_INT): results must equal what this program computes with long double.
 * The values are chosen so that every partial result is exact in long double (whatever
 * order the library combines them in) but not in double, so a kernel computing in double
 * fails. */
#include <complex.h>
#include <math.h>
#include "check.h"

int main(int argc, char **argv) {
    int rank, size;
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));
    const long double tiny = ldexpl(1.0L, -60);

    /* SUM: 1 + (r + 1) 2^-60. */
    long double x = 1.0L + (rank + 1) * tiny, s = 0, want = 0;
    for (int r = 0; r < size; r++) want += 1.0L + (r + 1) * tiny;
    MUST(MPI_Allreduce(&x, &s, 1, MPI_LONG_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    CHECK(s == want, "sum %.25Lg want %.25Lg", s, want);
    CHECK((long double)(double)want != want, "the test needs more than double precision");

    /* PROD: ranks 0 and 1 give 1 + 2^-31, others 2 and 1/2. */
    long double p = rank < 2 ? 1.0L + ldexpl(1.0L, -31) : (rank % 2 ? 0.5L : 2.0L), prod = 0;
    long double pw = 1;
    for (int r = 0; r < size; r++) pw *= r < 2 ? 1.0L + ldexpl(1.0L, -31) : (r % 2 ? 0.5L : 2.0L);
    MUST(MPI_Allreduce(&p, &prod, 1, MPI_LONG_DOUBLE, MPI_PROD, MPI_COMM_WORLD));
    CHECK(prod == pw, "prod %.25Lg want %.25Lg", prod, pw);

    /* MIN and MAX: values apart by less than a double's precision. */
    long double m = 1.0L + rank * ldexpl(1.0L, -62), mn = 0, mx = 0;
    MUST(MPI_Allreduce(&m, &mn, 1, MPI_LONG_DOUBLE, MPI_MIN, MPI_COMM_WORLD));
    MUST(MPI_Allreduce(&m, &mx, 1, MPI_LONG_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    CHECK(mn == 1.0L, "min %.25Lg", mn);
    CHECK(mx == 1.0L + (size - 1) * ldexpl(1.0L, -62), "max %.25Lg", mx);

    /* MINLOC/MAXLOC on pairs. */
    struct { long double v; int i; } in = {5.0L - (rank % 2) * ldexpl(1.0L, -60), rank}, lo, hi;
    MUST(MPI_Allreduce(&in, &lo, 1, MPI_LONG_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD));
    MUST(MPI_Allreduce(&in, &hi, 1, MPI_LONG_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD));
    CHECK(lo.i == (size > 1 ? 1 : 0) && lo.v == in.v - (size > 1 && rank % 2 == 0 ? ldexpl(1.0L, -60) : 0),
          "minloc %.25Lg at %d", lo.v, lo.i);
    CHECK(hi.i == 0 && hi.v == 5.0L, "maxloc %.25Lg at %d", hi.v, hi.i);

    /* Complex SUM and PROD. */
    long double complex z = (1.0L + (rank + 1) * tiny) + (rank + 1) * I, zs = 0, zp = 0;
    long double complex zsw = 0, zpw = 1;
    for (int r = 0; r < size; r++) {
        zsw += (1.0L + (r + 1) * tiny) + (r + 1) * I;
    }
    long double complex w = (rank + 1) + 1.0L * I;
    for (int r = 0; r < size; r++) zpw *= (r + 1) + 1.0L * I;
    MUST(MPI_Allreduce(&z, &zs, 1, MPI_C_LONG_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD));
    MUST(MPI_Allreduce(&w, &zp, 1, MPI_C_LONG_DOUBLE_COMPLEX, MPI_PROD, MPI_COMM_WORLD));
    CHECK(zs == zsw, "complex sum %.25Lg%+.25Lgi", creall(zs), cimagl(zs));
    CHECK(zp == zpw, "complex prod %.25Lg%+.25Lgi", creall(zp), cimagl(zp));

    /* Through a derived type (every other long double), nonblocking: gaps untouched. */
    MPI_Datatype v;
    MUST(MPI_Type_vector(2, 1, 2, MPI_LONG_DOUBLE, &v));
    MUST(MPI_Type_commit(&v));
    long double a[3] = {1.0L + (rank + 1) * tiny, -1.0L, 2.0L}, b[3] = {-7, -7, -7};
    MPI_Request r;
    MUST(MPI_Iallreduce(a, b, 1, v, MPI_SUM, MPI_COMM_WORLD, &r));
    MUST(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(b[0] == want && b[1] == -7 && b[2] == 2.0L * size, "vector sum %.25Lg %Lg %Lg", b[0], b[1], b[2]);
    MUST(MPI_Type_free(&v));

    /* An operation MPI does not define on the type is MPI_ERR_OP. */
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int cls = MPI_Allreduce(&z, &zs, 1, MPI_C_LONG_DOUBLE_COMPLEX, MPI_MAX, MPI_COMM_WORLD);
    MUST(MPI_Error_class(cls, &cls));
    CHECK(cls == MPI_ERR_OP, "max on complex long double: class %d", cls);
    cls = MPI_Allreduce(&x, &s, 1, MPI_LONG_DOUBLE, MPI_BAND, MPI_COMM_WORLD);
    MUST(MPI_Error_class(cls, &cls));
    CHECK(cls == MPI_ERR_OP, "band on long double: class %d", cls);
    MUST(MPI_Finalize());
    return 0;
}
