/* Info objects: set, get, replace, delete, count, nth key, dup, MPI_INFO_ENV, and
 * MPI_Get_hw_resource_info. */
#define _GNU_SOURCE
#include <sched.h>
#include <string.h>
#include "check.h"

/* The integer value of `key` in `info`, which must be there. */
static long int_value(MPI_Info info, const char *key)
{
    char val[MPI_MAX_INFO_VAL];
    int len = sizeof val, flag = 0;
    MUST(MPI_Info_get_string(info, key, &len, val, &flag));
    CHECK(flag, "hw_resource_info has %s", key);
    return strtol(val, NULL, 10);
}

/* The hardware the process runs on, against what the kernel tells it directly. */
static void hw_resources(void)
{
    MPI_Info hw;
    MUST(MPI_Get_hw_resource_info(&hw));
    CHECK(hw != MPI_INFO_NULL, "a new info object");
    cpu_set_t set;
    CHECK(sched_getaffinity(0, sizeof set, &set) == 0, "sched_getaffinity");
    long threads = int_value(hw, "oxmpi_hw_threads"), cores = int_value(hw, "oxmpi_cores");
    CHECK(threads == CPU_COUNT(&set), "hw threads %ld against %d", threads, CPU_COUNT(&set));
    CHECK(cores >= 1 && cores <= threads, "cores %ld", cores);
    long packages = int_value(hw, "oxmpi_packages"), numa = int_value(hw, "oxmpi_numa_nodes");
    CHECK(packages >= 1 && packages <= cores && numa >= 1 && numa <= threads,
          "packages %ld numa nodes %ld", packages, numa);
    char host[MPI_MAX_PROCESSOR_NAME], val[MPI_MAX_INFO_VAL];
    int hlen, len = sizeof val, flag = 0;
    MUST(MPI_Get_processor_name(host, &hlen));
    MUST(MPI_Info_get_string(hw, "oxmpi_host", &len, val, &flag));
    CHECK(flag && strcmp(val, host) == 0, "host %s against %s", val, host);
    MUST(MPI_Info_free(&hw));
    CHECK(MPI_Get_hw_resource_info(NULL) == MPI_ERR_ARG, "NULL hw_info");
}

int main(int argc, char **argv) {
    MPI_Info info, copy;
    int n, flag, len;
    char key[MPI_MAX_INFO_KEY], val[MPI_MAX_INFO_VAL];
    /* MPI_Info_create_env works before MPI_Init, with the arguments given or the process's. */
    MPI_Info env0;
    char *fake[] = {"/bin/solver", "-n", "3", NULL};
    MUST(MPI_Info_create_env(3, fake, &env0));
    len = sizeof val;
    MUST(MPI_Info_get_string(env0, "command", &len, val, &flag));
    CHECK(flag && strcmp(val, "/bin/solver") == 0, "create_env command %s", val);
    len = sizeof val;
    MUST(MPI_Info_get_string(env0, "argv", &len, val, &flag));
    CHECK(flag && strcmp(val, "-n 3") == 0, "create_env argv %s", val);
    MUST(MPI_Info_free(&env0));
    MUST(MPI_Info_create_env(0, NULL, &env0));
    len = sizeof val;
    MUST(MPI_Info_get_string(env0, "command", &len, val, &flag));
    CHECK(flag && strstr(val, "info") != NULL, "create_env's own command %s", val);
    MUST(MPI_Info_free(&env0));
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Info_create(&info));
    MUST(MPI_Info_set(info, "color", "red"));
    MUST(MPI_Info_set(info, "size", "3"));
    MUST(MPI_Info_set(info, "color", "blue"));
    MUST(MPI_Info_get_nkeys(info, &n));
    CHECK(n == 2, "nkeys %d", n);
    MUST(MPI_Info_get_nthkey(info, 0, key));
    CHECK(strcmp(key, "color") == 0, "first key %s", key);
    len = sizeof val;
    MUST(MPI_Info_get_string(info, "color", &len, val, &flag));
    CHECK(flag && strcmp(val, "blue") == 0 && len == 5, "value %s len %d", val, len);
    MUST(MPI_Info_get_valuelen(info, "color", &len, &flag));
    CHECK(flag && len == 4, "valuelen %d", len);
    MUST(MPI_Info_get(info, "color", 2, val, &flag));
    CHECK(flag && strcmp(val, "bl") == 0, "MPI_Info_get truncates to valuelen: %s", val);
    MUST(MPI_Info_dup(info, &copy));
    MUST(MPI_Info_delete(info, "color"));
    len = sizeof val;
    MUST(MPI_Info_get_string(info, "color", &len, val, &flag));
    CHECK(!flag, "deleted key");
    len = sizeof val;
    MUST(MPI_Info_get_string(copy, "color", &len, val, &flag));
    CHECK(flag, "the dup keeps its keys");
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(MPI_Info_delete(info, "color") == MPI_ERR_INFO_NOKEY, "delete a missing key");
    MUST(MPI_Info_free(&copy));
    MUST(MPI_Info_free(&info));
    CHECK(info == MPI_INFO_NULL, "freed");
    MUST(MPI_Info_get_nkeys(MPI_INFO_ENV, &n));
    CHECK(n >= 1, "MPI_INFO_ENV has keys");
    hw_resources();
    MUST(MPI_Finalize());
    return 0;
}
