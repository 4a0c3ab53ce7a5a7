/* registry.c - the apps `rotor train --app` knows. */
#include "apps/apps.h"

#include <string.h>

const rt_app_desc *const rt_apps[] = {&rt_app_sgd_mf, &rt_app_cd_mf, &rt_app_lda, NULL};

const rt_app_desc *rt_app_find(const char *name)
{
    for (size_t i = 0; rt_apps[i]; i++)
        if (!strcmp(rt_apps[i]->name, name))
            return rt_apps[i];
    return NULL;
}
