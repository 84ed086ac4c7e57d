// Registering an external endpoint grader: its secret headers are bound to its host, its /info
// and /metadata_schema are read, and only then is it stored. A registration that fails binds nothing.

import type { EndpointCreate } from "../endpoints/spec.ts";
import { AppError } from "../errors.ts";
import type { Grading } from "../grading.ts";
import { headerRefs, type Secrets } from "../secrets/secrets.ts";
import type { GraderRow } from "../store/graders.ts";
import { graderExists } from "../store/rules.ts";
import type { Store } from "../store.ts";

export class EndpointGraders {
  private readonly store: Store;
  private readonly grading: Grading;
  private readonly secrets: Secrets;

  constructor(store: Store, grading: Grading, secrets: Secrets) {
    this.store = store;
    this.grading = grading;
    this.secrets = secrets;
  }

  async create(project: string, key: string, description: string, create: EndpointCreate): Promise<GraderRow> {
    if (await this.store.get(project, key)) throw graderExists(project, key);
    // before the endpoint is called: a project at its quota sends nothing
    await this.store.precheck(project, { grader: true, bytes: 0 });
    const refs = headerRefs(create);
    const twice = Object.keys(create.headersSecret ?? {}).filter((h) =>
      Object.keys(create.headersEnv ?? {}).some((e) => e.toLowerCase() === h.toLowerCase()),
    );
    if (twice.length)
      throw new AppError("INVALID_REQUEST", `header ${twice[0]} is named in both headersEnv and headersSecret; name it once`);
    if (refs.length > 16) throw new AppError("INVALID_REQUEST", "at most 16 secret headers in headersEnv and headersSecret together");
    const unbind = await this.secrets.bindAll(
      project,
      refs.map(([, ref]) => ref),
      create.url,
    );
    try {
      const spec = await this.grading.endpoints.probe(project, create);
      return await this.store.insertEndpoint({ project, key, description, spec });
    } catch (error) {
      // a registration that failed binds nothing: a mistyped URL must not cost setting the secret again
      await unbind();
      throw error;
    }
  }
}
