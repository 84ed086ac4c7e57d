// Registering and deleting the judge models a project's judges call: an address the egress
// policy refuses is refused at registration (every call checks again), and the model's API key
// secret is bound to its host.

import { EgressDeniedError, type EgressPolicy } from "../egress.ts";
import { AppError } from "../errors.ts";
import type { Judges } from "../judges/judges.ts";
import type { ModelRow } from "../judges/spec.ts";
import { apiKeyRef, type Secrets } from "../secrets/secrets.ts";
import type { Store } from "../store.ts";

export class Models {
  private readonly store: Store;
  private readonly judges: Judges;
  private readonly egress: EgressPolicy;
  private readonly secrets: Secrets;

  constructor(store: Store, judges: Judges, egress: EgressPolicy, secrets: Secrets) {
    this.store = store;
    this.judges = judges;
    this.egress = egress;
    this.secrets = secrets;
  }

  async create(project: string, model: Omit<ModelRow, "id" | "project" | "createdAt">): Promise<ModelRow> {
    if (model.apiKeyEnv && model.apiKeySecret) throw new AppError("INVALID_REQUEST", "name the API key once: apiKeySecret or apiKeyEnv");
    // refused now when the address already is; every call checks again (DNS can change)
    const host = new URL(model.baseURL).hostname;
    try {
      await this.egress.resolve(host);
    } catch (error) {
      if (error instanceof EgressDeniedError) throw new AppError("EGRESS_DENIED", `baseURL: ${error.message}`);
      // a name that does not resolve yet is not refused: the model may come up later
    }
    const ref = apiKeyRef(model);
    const unbind = await this.secrets.bindAll(project, ref ? [ref] : [], model.baseURL);
    try {
      return await this.store.insertModel({ project, ...model });
    } catch (error) {
      await unbind(); // MODEL_EXISTS: nothing was registered, so nothing is bound
      throw error;
    }
  }

  /** Deletes a model no grader uses, and what the judges keep of it. */
  async delete(project: string, key: string): Promise<void> {
    this.judges.forget(await this.store.deleteModel(project, key));
  }
}
