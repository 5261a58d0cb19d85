/*
 * fuzz_config.c - libFuzzer target for the config parser.
 *
 * The input is a config file's text. config_load_string() must never crash,
 * leak or read out of bounds, and must either return a config or at least
 * one error, never both.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config_errors	 errs;
	struct config		*cfg;
	char			*text;

	/* a string ends at its first NUL; config_load() reports embedded
	 * ones, which the string loader cannot see */
	if ((text = malloc(size + 1)) == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	cfg = config_load_string(text, "fuzz.conf", &errs);
	if ((cfg == NULL) == (errs.n == 0))
		abort();
	for (size_t i = 0; i < errs.n; i++)
		if (strncmp(errs.msgs[i], "fuzz.conf:", 10) != 0)
			abort();
	if (cfg != NULL) {
		for (size_t i = 0; i < cfg->nfilters; i++)
			if (config_find_filter(cfg, cfg->filters[i].name) ==
			    NULL || !config_valid_filter_name(
			    cfg->filters[i].name, strlen(cfg->filters[i].name)))
				abort();
	}
	config_free(cfg);
	config_errors_free(&errs);
	free(text);
	return 0;
}
