/* Environment: init/finalize state, thread level, versions, ABI info,
 * time, processor name, predefined attributes, memory, type sizes. */
#include "check.h"
#include <string.h>
#include <stdint.h>
#include <complex.h>
#include <wchar.h>

/* A type of `expected` bytes of data and extent `extent`. */
static void size_ext_is(MPI_Datatype t, int expected, int extent, const char *name) {
    int s = -1; MPI_Count sx = -1; MPI_Aint lb = -1, ext = -1;
    OK(MPI_Type_size(t, &s));
    OK(MPI_Type_size_x(t, &sx));
    OK(MPI_Type_get_extent(t, &lb, &ext));
    if (s != expected || sx != expected || lb != 0 || ext != extent)
        FAIL("%s: size %d size_x %lld lb %ld extent %ld, expected %d and %d", name, s, (long long)sx, (long)lb,
             (long)ext, expected, extent);
    char tn[MPI_MAX_OBJECT_NAME]; int len = 0;
    OK(MPI_Type_get_name(t, tn, &len));
    if (strcmp(tn, name) != 0 || len != (int)strlen(name)) FAIL("type name %s, expected %s", tn, name);
}

static void size_is(MPI_Datatype t, int expected, const char *name) { size_ext_is(t, expected, expected, name); }

int main(int argc, char **argv) {
    int flag = -1, provided = -1, v = 0, sv = -1;
    OK(MPI_Initialized(&flag)); EQ(flag, 0);
    OK(MPI_Finalized(&flag)); EQ(flag, 0);
    OK(MPI_Get_version(&v, &sv)); EQ(v, 5); EQ(sv, 0);
    OK(MPI_Abi_get_version(&v, &sv)); EQ(v, 1); EQ(sv, 0);
    OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &check_rank);
    EQ(provided, MPI_THREAD_MULTIPLE);
    OK(MPI_Query_thread(&provided)); EQ(provided, MPI_THREAD_MULTIPLE);
    OK(MPI_Is_thread_main(&flag)); EQ(flag, 1);
    OK(MPI_Initialized(&flag)); EQ(flag, 1);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    ERR(MPI_ERR_OTHER, MPI_Init(&argc, &argv));

    char lib[MPI_MAX_LIBRARY_VERSION_STRING]; int len = 0;
    OK(MPI_Get_library_version(lib, &len));
    TRUE(strstr(lib, "ferry-mpi") != NULL); EQ(len, strlen(lib));

    MPI_Info info = MPI_INFO_NULL; char val[64]; int vlen = sizeof val;
    OK(MPI_Abi_get_info(&info));
    TRUE(info != MPI_INFO_NULL);
    OK(MPI_Info_get_string(info, "mpi_aint_size", &vlen, val, &flag));
    EQ(flag, 1); EQ(atoi(val), sizeof(MPI_Aint));
    vlen = sizeof val;
    OK(MPI_Info_get_string(info, "mpi_count_size", &vlen, val, &flag));
    EQ(flag, 1); EQ(atoi(val), sizeof(MPI_Count));
    OK(MPI_Info_free(&info)); TRUE(info == MPI_INFO_NULL);

    double t0 = MPI_Wtime(), tick = MPI_Wtick();
    TRUE(tick > 0 && tick <= 1e-3);
    double t1 = MPI_Wtime(); TRUE(t1 >= t0);

    char host[MPI_MAX_PROCESSOR_NAME]; len = -1;
    OK(MPI_Get_processor_name(host, &len));
    TRUE(len > 0); EQ(len, strlen(host));

    int *attr = NULL, size = 0;
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &attr, &flag));
    EQ(flag, 1); TRUE(*attr >= 32767);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &attr, &flag));
    EQ(flag, 1); EQ(*attr, size);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &attr, &flag));
    EQ(flag, 1); EQ(*attr, 0);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &attr, &flag));
    EQ(flag, 1); EQ(*attr, 0);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &attr, &flag));
    EQ(flag, 1); TRUE(*attr >= MPI_ERR_LASTCODE);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_HOST, &attr, &flag));
    EQ(flag, 1); EQ(*attr, MPI_PROC_NULL);
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_IO, &attr, &flag));
    EQ(flag, 1); EQ(*attr, MPI_ANY_SOURCE);
    ERR(MPI_ERR_KEYVAL, MPI_Comm_get_attr(MPI_COMM_WORLD, 12345, &attr, &flag));

    double *mem = NULL;
    OK(MPI_Alloc_mem(1024 * sizeof(double), MPI_INFO_NULL, &mem));
    TRUE(mem != NULL);
    for (int i = 0; i < 1024; i++) mem[i] = i;
    EQ(mem[1023], 1023);
    OK(MPI_Free_mem(mem));
    ERR(MPI_ERR_ARG, MPI_Alloc_mem(-1, MPI_INFO_NULL, &mem));

    size_is(MPI_INT, sizeof(int), "MPI_INT");
    size_is(MPI_CHAR, 1, "MPI_CHAR");
    size_is(MPI_SHORT, sizeof(short), "MPI_SHORT");
    size_is(MPI_LONG, sizeof(long), "MPI_LONG");
    size_is(MPI_LONG_LONG, sizeof(long long), "MPI_LONG_LONG");
    size_is(MPI_UNSIGNED_LONG, sizeof(unsigned long), "MPI_UNSIGNED_LONG");
    size_is(MPI_FLOAT, sizeof(float), "MPI_FLOAT");
    size_is(MPI_DOUBLE, sizeof(double), "MPI_DOUBLE");
    size_is(MPI_LONG_DOUBLE, sizeof(long double), "MPI_LONG_DOUBLE");
    size_is(MPI_C_BOOL, sizeof(_Bool), "MPI_C_BOOL");
    size_is(MPI_WCHAR, sizeof(wchar_t), "MPI_WCHAR");
    size_is(MPI_C_DOUBLE_COMPLEX, sizeof(double _Complex), "MPI_C_DOUBLE_COMPLEX");
    size_is(MPI_C_LONG_DOUBLE_COMPLEX, sizeof(long double _Complex), "MPI_C_LONG_DOUBLE_COMPLEX");
    size_is(MPI_AINT, sizeof(MPI_Aint), "MPI_AINT");
    size_is(MPI_COUNT, sizeof(MPI_Count), "MPI_COUNT");
    size_is(MPI_INT64_T, 8, "MPI_INT64_T");
    size_is(MPI_UINT16_T, 2, "MPI_UINT16_T");
    size_is(MPI_BYTE, 1, "MPI_BYTE");
    struct { float v; int i; } fi; struct { double v; int i; } di;
    struct { long v; int i; } li; struct { short v; int i; } si;
    struct { long double v; int i; } ldi;
    /* The pair types are the struct {value; int}: their size is the
     * members' (MPI 4.1 §6.9.4), their extent the struct's. */
    size_is(MPI_FLOAT_INT, sizeof fi, "MPI_FLOAT_INT");
    size_ext_is(MPI_DOUBLE_INT, sizeof di.v + sizeof di.i, sizeof di, "MPI_DOUBLE_INT");
    size_ext_is(MPI_LONG_INT, sizeof li.v + sizeof li.i, sizeof li, "MPI_LONG_INT");
    size_ext_is(MPI_SHORT_INT, sizeof si.v + sizeof si.i, sizeof si, "MPI_SHORT_INT");
    size_ext_is(MPI_LONG_DOUBLE_INT, sizeof ldi.v + sizeof ldi.i, sizeof ldi, "MPI_LONG_DOUBLE_INT");
    size_is(MPI_2INT, 2 * sizeof(int), "MPI_2INT");
    int s = 0;
    ERR(MPI_ERR_TYPE, MPI_Type_size(MPI_DATATYPE_NULL, &s));
    ERR(MPI_ERR_TYPE, MPI_Type_size((MPI_Datatype)0x211, &s));
    EQ(sizeof(MPI_Status), 32);

    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (check_rank == 0) printf("PASS env\n");
    OK(MPI_Finalize());
    OK(MPI_Finalized(&flag)); EQ(flag, 1);
    return 0;
}
