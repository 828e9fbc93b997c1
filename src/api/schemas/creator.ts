import { z } from "zod";

/** A person or service account a run is for (runs' `creator`; `on_behalf_of.creator` from integrations). */
export const CreatorSchema = z.object({
  type: z.enum(["user", "service_account"]),
  uid: z.string().min(1).max(300),
  display_name: z.string().min(1).max(300),
  email: z.string().max(300).optional(),
});
