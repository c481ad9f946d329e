// C++ through mpicxx: the header in a C++ translation unit, std::vector buffers, a user
// operation with C linkage, and exceptions that never meet the library.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <stdexcept>
#include <vector>

extern "C" void maxabs(void *in, void *inout, int *len, MPI_Datatype *) {
    auto a = static_cast<const double *>(in);
    auto b = static_cast<double *>(inout);
    for (int i = 0; i < *len; i++) {
        double x = a[i] < 0 ? -a[i] : a[i], y = b[i] < 0 ? -b[i] : b[i];
        b[i] = x > y ? x : y;
    }
}

static void must(int rc, const char *what) {
    if (rc != MPI_SUCCESS) throw std::runtime_error(what);
}

int main(int argc, char **argv) {
    try {
        must(MPI_Init(&argc, &argv), "init");
        int rank = 0, size = 0;
        must(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "rank");
        must(MPI_Comm_size(MPI_COMM_WORLD, &size), "size");
        std::vector<int> mine(100, rank), all(100 * size);
        must(MPI_Allgather(mine.data(), 100, MPI_INT, all.data(), 100, MPI_INT, MPI_COMM_WORLD),
             "allgather");
        long total = std::accumulate(all.begin(), all.end(), 0L);
        if (total != 100L * size * (size - 1) / 2) throw std::runtime_error("allgather sum");
        MPI_Op op;
        must(MPI_Op_create(maxabs, 1, &op), "op_create");
        std::vector<double> v{rank % 2 ? -1.0 * rank : 1.0 * rank, 0.5}, r(2);
        must(MPI_Allreduce(v.data(), r.data(), 2, MPI_DOUBLE, op, MPI_COMM_WORLD), "allreduce");
        if (r[0] != size - 1 || r[1] != 0.5) throw std::runtime_error("max |x|");
        must(MPI_Op_free(&op), "op_free");
        must(MPI_Finalize(), "finalize");
    } catch (const std::exception &e) {
        std::fprintf(stderr, "MISMATCH %s\n", e.what());
        return 1;
    }
    return 0;
}
