/** What a network can do beyond sending text (GET /api/network); a request for one it lacks is 422. */
export const CAPABILITIES = ["reactions", "typing", "read_receipts", "edit", "unsend", "groups", "media", "threads"] as const;
export type Capability = (typeof CAPABILITIES)[number];
export type NetworkCapabilities = Record<Capability, boolean>;
