/** The tapbacks of iMessage, as BlueBubbles' serializer names them (`love` … `question`). */
export const REACTIONS = ["love", "like", "dislike", "laugh", "emphasize", "question"] as const;
export type Reaction = (typeof REACTIONS)[number];
