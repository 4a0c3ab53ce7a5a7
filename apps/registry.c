/* registry.c - the apps `rotor train --app` knows. */
#include "apps.h"

#include <string.h>

/* TEMPORARY during parallel development (removed at integration). */
#pragma weak rt_app_cd_mf
#pragma weak rt_app_lda

const rt_app_desc *const rt_apps[] = {&rt_app_sgd_mf, &rt_app_cd_mf, &rt_app_lda, NULL};

const rt_app_desc *rt_app_find(const char *name)
{
    for (size_t i = 0; i < 3; i++)
        if (rt_apps[i] && !strcmp(rt_apps[i]->name, name))
            return rt_apps[i];
    return NULL;
}
