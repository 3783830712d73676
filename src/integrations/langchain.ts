import { BaseListChatMessageHistory } from "@langchain/core/chat_history";
import { Document } from "@langchain/core/documents";
import { AIMessage, HumanMessage, SystemMessage, type BaseMessage } from "@langchain/core/messages";
import { BaseRetriever, type BaseRetrieverInput } from "@langchain/core/retrievers";
import type { Body, MmClient } from "../client/index.js";

type SearchBody = Body<"postV1MemoriesSearch">;

export interface MmRetrieverInput extends BaseRetrieverInput {
  client: MmClient;
  /** Search fields besides the query: userId, agentId, tags, limit, threshold, mode. */
  search?: Omit<SearchBody, "query">;
}

/**
 * A LangChain.js retriever over mm's search: each hit becomes a Document whose pageContent is the
 * memory and whose metadata holds its id, score, user, agent, tags and time. It drops into any
 * chain that takes a retriever (`retriever.invoke(question)`).
 */
export class MmRetriever extends BaseRetriever {
  lc_namespace = ["mm", "retrievers"];
  private readonly client: MmClient;
  private readonly search: Omit<SearchBody, "query">;

  constructor(fields: MmRetrieverInput) {
    super(fields);
    this.client = fields.client;
    this.search = fields.search ?? {};
  }

  override async _getRelevantDocuments(query: string): Promise<Document[]> {
    const { results } = await this.client.memories.search({ ...this.search, query });
    return results.map(
      ({ content, ...hit }) => new Document({ pageContent: content, id: hit.id, metadata: { ...hit } }),
    );
  }
}

export interface MmChatMessageHistoryInput {
  client: MmClient;
  /** One conversation; its messages carry the tag `session:<sessionId>`. */
  sessionId: string;
  userId: string;
  agentId?: string;
}

const ROLES = ["human", "ai", "system"] as const;
type Role = (typeof ROLES)[number];

/**
 * A LangChain.js chat message history kept in mm: each message is a memory of `userId`, tagged
 * `chat`, `session:<id>` and `role:<human|ai|system>`, so the conversation is searchable by meaning
 * like any other memory. Messages come back in the order they were added (mm's ids sort by creation
 * time). A message with no text (an AI turn made only of tool calls) is not stored: a memory needs
 * content. Tool messages are stored as AI messages' text would be: only human, AI and system roles
 * are kept apart.
 */
export class MmChatMessageHistory extends BaseListChatMessageHistory {
  lc_namespace = ["mm", "stores", "message"];
  private readonly options: MmChatMessageHistoryInput;

  constructor(options: MmChatMessageHistoryInput) {
    super();
    this.options = options;
  }

  private get sessionTag(): string {
    return `session:${this.options.sessionId}`;
  }

  async getMessages(): Promise<BaseMessage[]> {
    const items = [];
    for await (const m of this.options.client.memories.listAll({ userId: this.options.userId, tags: [this.sessionTag] })) items.push(m);
    items.sort((a, b) => (a.id < b.id ? -1 : 1));
    return items.map((m) => {
      const role = (m.tags ?? []).find((t) => t.startsWith("role:"))?.slice(5) as Role | undefined;
      if (role === "human") return new HumanMessage(m.content);
      if (role === "system") return new SystemMessage(m.content);
      return new AIMessage(m.content);
    });
  }

  async addMessage(message: BaseMessage): Promise<void> {
    const text = typeof message.content === "string" ? message.content : message.text;
    if (!text.trim()) return;
    const type = message.getType();
    const role: Role = (ROLES as readonly string[]).includes(type) ? (type as Role) : "ai";
    const { client, userId, agentId } = this.options;
    await client.memories.create({ content: text, userId, ...(agentId ? { agentId } : {}), tags: ["chat", this.sessionTag, `role:${role}`] });
  }

  override async clear(): Promise<void> {
    const ids = [];
    for await (const m of this.options.client.memories.listAll({ userId: this.options.userId, tags: [this.sessionTag] })) ids.push(m.id);
    for (const id of ids) await this.options.client.memories.delete(id);
  }
}
