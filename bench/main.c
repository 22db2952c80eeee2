/*
 * main.c -- the stand-alone `flashstock-bench` program; the same code runs
 * as `flashstock bench`.
 */
#include "bench.h"

int main(int argc, char **argv)
{
	return cmd_bench(argc, argv);
}
